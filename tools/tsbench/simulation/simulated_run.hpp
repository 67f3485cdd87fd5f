// SPDX-License-Identifier: MIT
// netio_tsbench --simulate: the same engines as the socket run (netio::scheduler's
// InputNode, ComputeNode and DeterministicEngine), driven exactly as the scheduled-push
// pattern drives them (TimesliceSender::drive, TimesliceReceiver::deliver, DdeService), but
// in a discrete-event model of the network instead of over sockets.
//
// The model (docs/design/scheduled-push.md, "The simulator"):
//   - N input nodes, M compute nodes (ranks 0..N-1 and N..N+M-1, as in the socket run); a
//     DDE replica on compute node 0 (DFS), and a second on compute node 1 whose proposals
//     are compared with the first's (SimulationResult::replica_gaps), not sent;
//   - the network: NetworkModel below (ports, as the emulated back-end shapes it, or the
//     lossless fluid model), capacities from the --emulate spec;
//   - latency: every message a draw of the spec's delay= on its connection (one stream per
//     connection and direction, as the emulator), replies included, then base_latency. A
//     connection keeps its order;
//   - --slowdown: the spec's slowdown= windows scale the node's ports and add their delay to
//     what it sends, counted from the start of the run;
//   - clocks: every node's clock runs at (1 + drift) with an offset, both drawn from the
//     spec's seed within ±max_clock_offset and ±max_clock_drift; the engines see only their
//     node's clock. Records (CSV) are in the model's true time;
//   - no processing time: a complete time-slice is handed over and freed when it completes.
//     Timers run on time unless SimulationOptions::timer_late (the inputs' due timers) and
//     port_late (the ports' releases) say how late. No faults.
// Deterministic: the same options and seed give the same records.
#pragma once

#include "tsbench/bench_config.hpp"
#include "tsbench/records.hpp"
#include "tsbench/simulation/fluid_network.hpp"

#include "netio/scheduler/input_node.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace netio::tools::tsbench::simulation {

// What carries the contributions (docs/design/scheduled-push.md, "The simulator"):
//   - ports: as the emulated back-end. Every connection has its own queue; a node's out= and
//     in= ports (and the core, when given) each pass whole buffers through a token bucket,
//     fair between the connections that have one waiting: an input sends to several compute
//     nodes at once, and a busy receiver port delays only what goes to it;
//   - lossless: a fluid model (FluidNetwork) of a lossless network whose input ports have a
//     single queue: an out-port sends one contribution at a time at the rate the receiving
//     port gives it, and whatever follows waits behind it (head-of-line blocking).
enum class NetworkModel { ports, lossless };

const char* to_string(NetworkModel model) noexcept;

struct SimulationOptions {
  NetworkModel network = NetworkModel::ports;
  PortSharing sharing = PortSharing::fair;
  // The switch core (ports model): a capacity shared by every buffer between nodes; 0: none.
  RateLimit core;
  ns::Duration base_latency = std::chrono::microseconds(5);
  ns::Duration max_clock_offset = std::chrono::milliseconds(1);  // |offset| of every node's clock, at most
  double max_clock_drift = 20e-6;                                 // |drift|, at most (20 ppm)
  // How late an input's timer fires (the pattern's due timer: DFS's paced sends and interval
  // starts), a draw per firing from the spec's seed; none: on time. What a busy host adds:
  // an event-loop thread that is not on a core when its timer expires.
  DelayDistribution timer_late;
  // How late a node's port (out=, in=, the core) releases a buffer it had to wait for: the
  // emulator's ports release on event-loop timers, which fire late as the inputs' do. A draw
  // per such release from the port's own stream (spec's seed); the port releases whatever
  // comes due before that late time with it (its loop is behind until then). The port's
  // schedule does not move (its bucket refills meanwhile); a port's buffers stay in the order
  // released. none: on time.
  DelayDistribution port_late;
  // Model time after which a run that has not finished is an error.
  ns::Duration time_limit = std::chrono::hours(2);
  // Asked every few thousand events; true stops the run (interrupted).
  std::function<bool()> should_stop;
};

struct SimulationResult {
  RunRecords records;
  std::string error;  // empty when every time-slice was built
  bool interrupted = false;
  std::uint64_t events = 0;
  ns::Time end{0};  // model time when the last time-slice was handed over
  // DFS with M ≥ 2: for every proposal both DDE replicas made (compute nodes 0 and 1, each
  // receiving the reports over its own connections), how far apart the starts they proposed
  // are, in true time.
  std::vector<ns::Duration> replica_gaps;
};

// Runs one scheduler for bench.duration of model time (or bench.timeslices), then lets every
// input finish the interval it is in (as the socket run does). Throws netio::Error
// (Errc::invalid_option) for a configuration it cannot model (no capacity in the spec).
SimulationResult simulate(const BenchConfig& bench, ns::Mode mode, const SimulationOptions& options);

// The core's capacity from "RATE[,burst=SIZE]" ("10Gbps", as in= and out=; burst as their
// default: 4 ms at the rate, at least 64 KiB). Throws netio::Error (Errc::invalid_option) naming
// --core and the text.
RateLimit parse_core(const std::string& text);

// A distribution as delay= in an emulation spec ("lognormal:mean=100us,sigma=1"; "none").
// Throws netio::Error (Errc::invalid_option) naming --timer-late and the text.
DelayDistribution parse_timer_late(const std::string& text);
// The same, naming --port-late.
DelayDistribution parse_port_late(const std::string& text);

// Throws as simulate() does when `bench` cannot be modelled (for the command line's checks).
void check_simulatable(const BenchConfig& bench, const SimulationOptions& options);

}  // namespace netio::tools::tsbench::simulation
