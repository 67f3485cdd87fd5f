// SPDX-License-Identifier: MIT
#include "tsbench/bench_config.hpp"

#include "common/units.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"
#include "netio/scheduler/credits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace netio::tools::tsbench {

namespace {

constexpr netio::detail::Rejecter reject{Errc::invalid_option, ""};

}  // namespace

FailSpec parse_fail_spec(const std::string& text) { return parse_compute_at(text, "--fail"); }

FailSpec parse_compute_at(const std::string& text, const std::string& option) {
  const auto bad = [&](const std::string& why) {
    reject(fmt::format("{} '{}': {} (expected 'compute:K,at=T', e.g. 'compute:1,at=5s')", option, text, why));
  };
  constexpr std::string_view prefix = "compute:";
  if (text.rfind(prefix, 0) != 0) bad("only a compute node can be named");
  const auto comma = text.find(',');
  if (comma == std::string::npos || text.compare(comma + 1, 3, "at=") != 0) bad("no at=");
  const auto index = text.substr(prefix.size(), comma - prefix.size());
  FailSpec spec;
  try {
    std::size_t used = 0;
    const auto k = std::stoul(index, &used);
    if (used != index.size() || k > 0xFFFFFFFFul) bad("'" + index + "' is not a compute node's index");
    spec.compute = static_cast<std::uint32_t>(k);
  } catch (const std::logic_error&) {
    bad("'" + index + "' is not a compute node's index");
  }
  const auto at = parse_duration(text.substr(comma + 4));
  if (!at) bad(at.error());
  spec.at = at.value();
  return spec;
}

std::uint32_t BenchConfig::dde_replica_count() const {
  if (dde_replicas) return *dde_replicas;
  return computes >= 2 ? 2 : 1;
}

std::optional<FailSpec> BenchConfig::fail_spec() const {
  if (fail.empty()) return std::nullopt;
  return parse_fail_spec(fail);
}

bool join_kind_is_input(const std::string& text) { return text.rfind("input,at=", 0) == 0; }

std::chrono::nanoseconds parse_join_spec(const std::string& text) {
  const std::string_view prefix = join_kind_is_input(text) ? "input,at=" : "compute,at=";
  if (text.rfind(prefix, 0) != 0) {
    reject(
        fmt::format("--join '{}': expected 'compute,at=T' or 'input,at=T', e.g. 'compute,at=5s' (slot M-1 joins "
                    "T after the start) or 'input,at=5s' (input N-1)",
                    text));
  }
  const auto at = parse_duration(text.substr(prefix.size()));
  if (!at) reject(fmt::format("--join '{}': {}", text, at.error()));
  return at.value();
}

std::optional<FailSpec> BenchConfig::drain_spec() const {
  if (drain.empty()) return std::nullopt;
  return parse_compute_at(drain, "--drain");
}

std::optional<std::chrono::nanoseconds> BenchConfig::join_at() const {
  if (join.empty()) return std::nullopt;
  return parse_join_spec(join);
}

std::optional<std::uint32_t> BenchConfig::standby_slot() const {
  if (join.empty() || join_kind_is_input(join)) return std::nullopt;
  return computes - 1;
}

std::optional<std::uint32_t> BenchConfig::standby_input() const {
  if (join.empty() || !join_kind_is_input(join)) return std::nullopt;
  return inputs - 1;
}

scheduler::SchedulerConfig BenchConfig::scheduler_config() const {
  scheduler::SchedulerConfig config;
  config.input_count = inputs;
  config.compute_count = computes;
  config.timeslices_per_interval = interval_timeslices;
  config.history_length = history_length;
  config.speed_up_variance_threshold = speed_up_threshold;
  config.speed_up_percent = speed_up_percent;
  config.duration_rule = duration_rule;
  config.clock_rule = clock_rule;
  config.fallback = fallback;
  config.assignment = assignment;
  return config;
}

std::optional<EmulationConfig> BenchConfig::node_emulation(std::uint32_t rank) const {
  std::string spec = emulate == "none" ? std::string() : emulate;
  if (!slowdown.empty()) {
    if (!spec.empty()) spec += ';';
    spec.append("slowdown=").append(slowdown);  // appends: GCC 12 -O3 warns (-Wrestrict) on "..." + string
  }
  if (spec.empty()) return std::nullopt;
  EmulationConfig config = parse_emulation_spec(spec);
  config.node_id = rank;
  config.seed += rank;  // every node its own draws, the same ones in every run
  return config;
}

void BenchConfig::resolve() {
  if (inputs == 0 || computes == 0) reject("--inputs and --computes must be at least 1");
  if (!interval_given) {
    interval_timeslices =
        std::max<std::uint64_t>(computes, default_interval_timeslices - default_interval_timeslices % computes);
  }
  if (contribution_bytes == 0) reject("--contribution-size must be at least 1 byte");
  if (buffer_bytes == 0) {
    const auto n = credits.value_or(scheduler::default_credits_per_input);
    if (n < scheduler::min_credits_per_input) {
      reject(scheduler::too_few_credits_message(n, fmt::format("--credits {}", n),
                                                fmt::format("--credits {} or more", scheduler::min_credits_per_input)));
    }
    buffer_bytes = scheduler::buffer_for_credits(n, inputs, contribution_bytes);
  } else if (credits && buffer_bytes != scheduler::buffer_for_credits(*credits, inputs, contribution_bytes)) {
    reject(fmt::format("--credits {} and --buffer-size {} both size the receive buffer: give one of them", *credits,
                       format_size_compact(buffer_bytes)));
  }
  validate();
}

std::uint32_t BenchConfig::credits_per_pair() const {
  return scheduler::credits_per_input(buffer_bytes, inputs, contribution_bytes);
}

void BenchConfig::validate() const {
  if (inputs == 0 || computes == 0) reject("--inputs and --computes must be at least 1");
  if (contribution_bytes == 0) reject("--contribution-size must be at least 1 byte");
  if (buffer_bytes == 0) reject("the receive buffer is not sized yet (BenchConfig::resolve() derives it)");
  const auto least = scheduler::buffer_for_credits(scheduler::min_credits_per_input, inputs, contribution_bytes);
  if (buffer_bytes < least) {
    reject(scheduler::too_few_credits_message(
        buffer_bytes / inputs / contribution_bytes,
        fmt::format("--buffer-size {} ({} / {} inputs / {} contributions)", format_size_compact(buffer_bytes),
                    format_size(buffer_bytes), inputs, format_size(contribution_bytes)),
        fmt::format("--buffer-size {} or more, or --credits {} instead (without either: --credits {}, a {} buffer)",
                    format_size_compact(least), scheduler::min_credits_per_input, scheduler::default_credits_per_input,
                    format_size(scheduler::buffer_for_credits(scheduler::default_credits_per_input, inputs,
                                                              contribution_bytes)))));
  }
  if (interval_timeslices < computes) {
    reject(fmt::format("--interval {} is shorter than a round ({} compute nodes)", interval_timeslices, computes));
  }
  if (interval_timeslices % computes != 0) {
    const auto below = interval_timeslices - interval_timeslices % computes;
    reject(fmt::format("--interval {} is not whole rounds of {} compute nodes (one time-slice each): give {} or {}",
                       interval_timeslices, computes, below, below + computes));
  }
  if (!timeslices && duration <= std::chrono::nanoseconds::zero()) reject("-t/--time must be more than 0");
  const std::uint64_t warmup_timeslices = interval_timeslices * warmup_intervals;
  if (timeslices && *timeslices <= warmup_timeslices) {
    reject(
        fmt::format("-n {} time-slices fall within the {} warm-up intervals ({} time-slices), which the statistics "
                    "leave out: give more, or a lower --warmup-intervals",
                    *timeslices, warmup_intervals, warmup_timeslices));
  }
  scheduler::validate(scheduler_config());
  (void)node_emulation(0);  // throws for a bad spec
  if (const auto failing = fail_spec(); failing && failing->compute >= computes) {
    reject(fmt::format("--fail '{}': compute node {} out of range ({} compute nodes: 0 to {})", fail, failing->compute,
                       computes, computes - 1));
  }
  if (dde_replicas && (*dde_replicas == 0 || *dde_replicas > computes)) {
    reject(
        fmt::format("--dde-replicas {}: between 1 and the {} compute nodes (each runs one)", *dde_replicas, computes));
  }
  if (!drain.empty() || !join.empty()) {
    const auto draining = drain_spec();
    (void)join_at();
    if (!fail.empty()) reject("--drain or --join with --fail: one change per run");
    if (standby_input()) {
      if (inputs < 2) reject(fmt::format("--join '{}' needs at least 2 inputs (input N-1 joins)", join));
      if (!drain.empty()) reject(fmt::format("--join '{}' with --drain: one change per run", join));
    } else if (computes < 2) {
      reject("--drain and --join need at least 2 compute nodes");
    }
    if (draining && draining->compute >= computes) {
      reject(fmt::format("--drain '{}': compute node {} out of range ({} compute nodes: 0 to {})", drain,
                         draining->compute, computes, computes - 1));
    }
    if (draining && standby_slot() == draining->compute) {
      reject(fmt::format("--drain '{}': compute node {} is the slot --join keeps out until it joins", drain,
                         draining->compute));
    }
    // A drained node takes its DDE replica (DFS) with it: another must be left.
    if (draining && draining->compute < dde_replica_count() && dde_replica_count() < 2) {
      reject(
          fmt::format("--drain '{}': compute node {} carries the only DDE replica (--dde-replicas 1); drain "
                      "another, or run two",
                      drain, draining->compute));
    }
  }
  if (transport != "tcp" && transport != "shm" && transport != "fabric") {
    reject("--backend must be tcp, shm or fabric, not " + transport);
  }
}

Endpoint local_endpoint(const std::string& transport) {
  if (transport == "shm") return Endpoint::parse("shm://netio-tsbench:0");
  if (transport != "fabric") return Endpoint::parse("tcp://127.0.0.1:0");
  // libfabric's tcp provider works on any Linux box; NETIO_FABRIC_PROVIDER picks another.
  const char* provider = std::getenv("NETIO_FABRIC_PROVIDER");
  return Endpoint::parse(
      fmt::format("fabric://127.0.0.1:0?provider={}", provider != nullptr && *provider != '\0' ? provider : "tcp"));
}

}  // namespace netio::tools::tsbench
