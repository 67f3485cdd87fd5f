// SPDX-License-Identifier: MIT
// simulate(): the network (SimulatedNetwork), the nodes (SimulatedNodes) and the recording
// (RunRecorder), run event by event until the nodes are done.
#include "netio/scheduler/simulation/simulate.hpp"

#include "run_recorder.hpp"
#include "simulated_network.hpp"
#include "simulated_nodes.hpp"

#include "netio/emulated/slowdown_schedule.hpp"
#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <fmt/format.h>

#include <chrono>

namespace netio::scheduler::simulation {

namespace {

constexpr detail::Rejecter reject{Errc::invalid_option, ""};

SimulationResult run(SimulatedNetwork& network, SimulatedNodes& nodes, const SimulationOptions& options) {
  SimulationResult result;
  try {
    network.start();
    nodes.start();
    while (!nodes.done()) {
      const auto event = network.next_event();
      if (!event) break;
      if (event->at > Time{options.time_limit}) {
        result.error = fmt::format("the simulation did not finish within {} s of model time",
                                   std::chrono::duration_cast<std::chrono::seconds>(options.time_limit).count());
        break;
      }
      network.dispatch(*event);
      ++result.events;
      if (result.events % 4096 == 0 && options.should_stop && options.should_stop()) {
        result.interrupted = true;
        break;
      }
    }
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  if (!nodes.done() && result.error.empty() && !result.interrupted) {
    result.error = fmt::format("the simulation stalled at {:.3f} s: {} of {} time-slices handed over",
                               static_cast<double>(network.now().count()) / 1e9, nodes.handed_over(), nodes.limit());
  }
  result.end = network.now();
  result.network_summary = network.summary();
  nodes.finish(result);
  return result;
}

}  // namespace

std::string_view to_string(NetworkModel model) noexcept {
  switch (model) {
    case NetworkModel::ports: return "ports";
    case NetworkModel::lossless: return "lossless";
    case NetworkModel::packet: return "packet";
  }
  return "ports";
}

void check_simulatable(const SimulatedSystem& system, const SimulationOptions& options) {
  ns::validate(system.scheduler);
  if (system.nodes.empty()) reject("--simulate needs a network to model: --emulate with in= or out= (it is 'none')");
  if (system.nodes.size() != std::size_t{system.inputs()} + system.computes()) {
    reject(fmt::format("the simulated system has {} nodes' emulations for {} nodes", system.nodes.size(),
                       std::size_t{system.inputs()} + system.computes()));
  }
  const auto& base = system.nodes.front();
  if (!base.node_in && !base.node_out) {
    reject(fmt::format("--simulate needs a port capacity: in= or out= in --emulate '{}'", system.emulate));
  }
  if (options.max_clock_drift < 0 || options.max_clock_drift > 0.01) {
    reject("the simulated clock drift must be within [0, 1 %] (0 .. 10000 ppm)");
  }
  if (options.max_clock_offset < Duration{0}) reject("the simulated clock offset must not be negative");
  if (options.core && options.network != NetworkModel::ports) {
    reject("--core is a part of the ports model (--network ports), not of the lossless one");
  }
  if (options.control_lane && options.network != NetworkModel::packet &&
      (options.network != NetworkModel::ports || options.sharing != PortSharing::fifo)) {
    reject(
        "--control-lane is a part of the ports model with --port-sharing fifo (a fair port passes a control "
        "message by its finish time already; the lossless model has no lane) and of --network fat-tree-lossless");
  }
  if (options.network == NetworkModel::packet) {
    if (!options.packet_network) reject("the packet network model needs a network (SimulationOptions::packet_network)");
    for (const auto& e : system.nodes) {
      if (!emulated::SlowdownSchedule::node_windows(e).empty())
        reject("--slowdown is not modelled on a packet network (its links keep their rates)");
    }
  }
  if (const auto& failure = system.failure) {
    if (failure->compute >= system.computes()) {
      reject(fmt::format("the failing compute node {} is out of range ({} compute nodes)", failure->compute,
                         system.computes()));
    }
    if (system.computes() < 2) reject("a compute node's failure needs another to build its time-slices (M >= 2)");
  }
  if (const auto& joining = system.input_join) {
    if (joining->input >= system.inputs() || system.inputs() < 2) {
      reject(fmt::format("the joining input {} needs another input to start without it ({} inputs)", joining->input,
                         system.inputs()));
    }
    if (system.failure || system.membership) reject("an input joining with a compute node's change: one per run");
  }
  if (options.port_late.kind != DelayKind::none && options.network != NetworkModel::ports) {
    reject("--port-late is a part of the ports model (--network ports), not of the lossless one");
  }
}

SimulationResult simulate(const SimulatedSystem& system, ns::Mode mode, const SimulationOptions& options) {
  check_simulatable(system, options);
  SimulatedNetwork network(system, options);
  RunRecorder recorder(system.buffer_bytes, system.scheduler.timeslices_in_interval(), system.warmup_intervals);
  SimulatedNodes nodes(system, mode, options, network, recorder);
  network.connect(nodes);
  return run(network, nodes, options);
}

}  // namespace netio::scheduler::simulation
