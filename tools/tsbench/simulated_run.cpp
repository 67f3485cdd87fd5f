// SPDX-License-Identifier: MIT
#include "tsbench/simulated_run.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <fmt/format.h>

namespace netio::tools::tsbench::simulation {

SimulatedSystem simulated_system(const BenchConfig& bench) {
  SimulatedSystem system;
  system.scheduler = bench.scheduler_config();
  system.contribution_bytes = bench.contribution_bytes;
  system.buffer_bytes = bench.buffer_bytes;
  if (bench.node_emulation(0)) {
    system.nodes.reserve(bench.inputs + bench.computes);
    for (std::uint32_t rank = 0; rank < bench.inputs + bench.computes; ++rank) {
      system.nodes.push_back(*bench.node_emulation(rank));
    }
  }
  system.emulate = bench.emulate;
  system.timeslices = bench.timeslices;
  system.duration = bench.duration;
  system.sample_period = bench.sample_period;
  system.warmup_intervals = bench.warmup_intervals;
  if (const auto failing = bench.fail_spec())
    system.failure = SimulatedSystem::ComputeFailure{failing->compute, failing->at};
  if (const auto draining = bench.drain_spec())
    system.membership = SimulatedSystem::MembershipChange{draining->compute, false, draining->at};
  if (const auto input = bench.standby_input())  // --join 'input,at=T'
    system.input_join = SimulatedSystem::StandbyInput{*input, *bench.join_at()};
  else if (const auto joining = bench.join_at())
    system.membership = SimulatedSystem::MembershipChange{bench.computes - 1, true, *joining};
  return system;
}

SimulationResult simulate(const BenchConfig& bench, scheduler::Mode mode, const SimulationOptions& options) {
  return scheduler::simulation::simulate(simulated_system(bench), mode, options);
}

void check_simulatable(const BenchConfig& bench, const SimulationOptions& options) {
  scheduler::simulation::check_simulatable(simulated_system(bench), options);
}

// One clause of an emulation spec given to an option of its own (--core RATE, --timer-late
// DIST): the spec parser's rule, so that it reads as in --emulate; an error names the option.
static EmulationConfig parse_clause(const char* option, const char* key, const std::string& text) {
  try {
    return parse_emulation_spec(fmt::format("{}={}", key, text));
  } catch (const std::exception& e) {
    detail::reject(Errc::invalid_option, "", fmt::format("{} '{}': {}", option, text, e.what()));
  }
}

RateLimit parse_core(const std::string& text) { return parse_clause("--core", "core", text).core; }

DelayDistribution parse_timer_late(const std::string& text) {
  return parse_clause("--timer-late", "delay", text).delay;
}

DelayDistribution parse_port_late(const std::string& text) { return parse_clause("--port-late", "delay", text).delay; }

}  // namespace netio::tools::tsbench::simulation
