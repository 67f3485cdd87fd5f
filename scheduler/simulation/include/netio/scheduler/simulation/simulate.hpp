// SPDX-License-Identifier: MIT
// The simulator (netio::scheduler_simulation; netio_tsbench --simulate is its command line):
// the same engines as a socket run (netio::scheduler's InputNode, ComputeNode and
// DeterministicEngine), driven exactly as the scheduled-push pattern drives them
// (TimesliceSender::drive, TimesliceReceiver::deliver, DdeService), but in a discrete-event
// model of the network instead of over sockets.
//
// Its parts (src/): the network (simulated_network: the event queue, the ports or the fluid
// model, every message's way), the nodes (simulated_nodes: the engines, as the pattern drives
// them) and the recording (run_recorder: what a run records). The model's own parts (delay
// draws, slow-down windows, token buckets, fair sharing) are the emulated back-end's
// (netio::network_model), so that a spec means the same in both.
//
// The model (docs/design/scheduled-push.md, "The simulator"):
//   - N input nodes, M compute nodes (ranks 0..N-1 and N..N+M-1, as in the socket run); a
//     DDE replica on compute node 0 (DFS), and a second on compute node 1 whose proposals
//     are compared with the first's (SimulationResult::replica_gaps), not sent; with
//     assignment by load (SchedulerConfig::assignment), the Assigner on compute node 0 (in
//     either mode) and a replica on compute node 1 compared likewise;
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
//     port_late (the ports' releases) say how late;
//   - a compute node's failure (SimulatedSystem::failure): at its time it is gone, and so are
//     its connections: every input sees it lost at once (as on a socket's connection
//     failure), nothing more reaches it and nothing it sent is delivered after. The inputs
//     reroute its time-slices as the pattern does (reassignment.hpp: reroute(), the
//     LostCompute notice of what they know built there, the reassigned contributions outside
//     the credits), the others build them (ComputeNode::on_reassigned). Compute node 0
//     carries the first DDE replica (DFS) and coordinator (load), compute node 1 the second:
//     when node 0 fails, the second answers the inputs from then on (the DDE fails over);
//     before, its proposals and decisions are compared with the first's, not sent.
// Deterministic: the same options and seed give the same records.
#pragma once

#include "netio/scheduler/simulation/fluid_network.hpp"
#include "netio/scheduler/simulation/records.hpp"

#include "netio/emulation.hpp"
#include "netio/scheduler/config.hpp"
#include "netio/scheduler/input_node.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netio::scheduler::simulation {

// What carries the contributions (docs/design/scheduled-push.md, "The simulator"):
//   - ports: as the emulated back-end. Every connection has its own queue; a node's out= and
//     in= ports (and the core, when given) each pass whole buffers through a token bucket,
//     fair between the connections that have one waiting: an input sends to several compute
//     nodes at once, and a busy receiver port delays only what goes to it;
//   - lossless: a fluid model (FluidNetwork) of a lossless network whose input ports have a
//     single queue: an out-port sends one contribution at a time at the rate the receiving
//     port gives it, and whatever follows waits behind it (head-of-line blocking);
//   - packet: a packet-level network of another simulator (PacketNetwork below: the ns-3
//     fat-tree, docs/design/fabric-model.md), every message through its queues. The spec's
//     delay= and slowdown= are not applied: latency and capacity are the network's own.
enum class NetworkModel { ports, lossless, packet };

// The system a run models: N inputs, M compute nodes, their sizes, and the emulated network
// every node sits on (netio_tsbench builds it from its BenchConfig).
struct SimulatedSystem {
  SchedulerConfig scheduler;  // input_count N and compute_count M among it
  std::uint64_t contribution_bytes = 0;
  std::uint64_t buffer_bytes = 0;  // every compute node's receive buffer
  // Every node's emulation, by rank (inputs 0 .. N-1, computes N .. N+M-1): the spec with
  // node= set to the rank (and its slowdown= windows). Empty: nothing is shaped (which the
  // simulator refuses: it needs a capacity).
  std::vector<EmulationConfig> nodes;
  std::string emulate;  // the spec's text, for the messages that quote it
  // How long: a count of time-slices, or else `duration` of model time.
  std::optional<std::uint64_t> timeslices;
  ns::Duration duration = std::chrono::seconds(12);
  ns::Duration sample_period = std::chrono::milliseconds(5);  // receive-buffer fill
  std::uint32_t warmup_intervals = 0;                         // left out of the statistics (RunRecords)
  // A compute node that dies `at` after the run's start (netio_tsbench --fail); none: no fault.
  struct ComputeFailure {
    ComputeIndex compute = 0;
    ns::Duration at{0};
  };
  std::optional<ComputeFailure> failure;
  // A compute node draining, or a standby slot joining, `at` after the start (netio_tsbench
  // --drain, --join). Modelled as the pattern does it. Under assignment by load the node asks
  // every input (on its reply connection), the inputs flag it in their load reports and the
  // coordinator names the boundary in its decision. Under the fixed assignment the node that names
  // the boundary (the draining one; member 0 for a join) names the first interval start beyond
  // H + (credits + 2)·M, H the highest time-slice it received, and tells every input on its
  // reply connection (ordered with its credits); every input then routes the slot's
  // time-slices by the membership (scheduler/membership.hpp). Simplified: the members take
  // other slots' time-slices from the start (ComputeNode::accept_rerouted()), the drained
  // node stays (it gets nothing more).
  struct MembershipChange {
    ComputeIndex compute = 0;
    bool joins = false;  // joins: a standby slot from the start, joining at `at`
    ns::Duration at{0};
  };
  std::optional<MembershipChange> membership;
  // An input on standby from the start, joining `at` after it (netio_tsbench --join
  // 'input,at=T'; fixed assignment only), as the pattern does it (docs/design/assignment.md,
  // "Inputs joining"): it says hello and sends nothing; at `at` it asks the lowest member
  // compute node on its data connection, which names the boundary, the first interval start
  // from H + (credits + 2)·M (H the highest time-slice it received), and tells every input on
  // its reply connection (ordered with its credits). Every input passes it on to the other
  // compute nodes on its data connection and to the DDE replicas on its control connections,
  // ahead of whatever it sends after; the joiner starts its stream at the boundary
  // (InputNode::start_at()). The compute nodes build a time-slice from the inputs that are
  // members at it (ComputeNode's standby inputs), the DDE's history counts the joiner from the
  // boundary's interval on (HistoryManager::join()).
  struct StandbyInput {
    InputIndex input = 0;
    ns::Duration at{0};
  };
  std::optional<StandbyInput> input_join;

  std::uint32_t inputs() const noexcept { return scheduler.input_count; }
  std::uint32_t computes() const noexcept { return scheduler.compute_count; }
};

std::string_view to_string(NetworkModel model) noexcept;

// A packet-level network that carries every message of a run (NetworkModel::packet), in its own
// simulated time, which the simulator follows: it runs the network up to its own next event
// and takes the deliveries as events. Nodes by rank (inputs 0 .. N-1, compute nodes
// N .. N+M-1). Channel 0: the data connections (contributions one way, acknowledgements and
// credits back); channel 1: the control connections (reports and requests, proposals, clock
// probes, echoes and samples), as the scheduled-push pattern has a connection of each.
class PacketNetwork {
 public:
  virtual ~PacketNetwork() = default;
  // A message of `bytes`; `delivered` runs (inside run_until) when its last byte arrives.
  // `control`: not a contribution, for a network with a priority lane for control traffic
  // (SimulationOptions::control_lane; one without a lane ignores it).
  virtual void send(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, std::uint32_t channel, bool control,
                    std::function<void()> delivered) = 0;
  // Runs the network's events up to `until`, or until a callback calls stop(); now() is where it stopped.
  virtual void run_until(Time until) = 0;
  virtual void stop() = 0;
  virtual Time now() const = 0;
  // One line on what it did (events, packets, drops), for the tool's log.
  virtual std::string summary() const = 0;
};

// Makes the packet network of one run (a run at a time: ns-3's simulator is one per process).
using PacketNetworkFactory = std::function<std::unique_ptr<PacketNetwork>(const SimulatedSystem&)>;

struct SimulationOptions {
  NetworkModel network = NetworkModel::ports;
  PortSharing sharing = PortSharing::fair;
  // The switch core (ports model): a capacity shared by every buffer between nodes; 0: none.
  RateLimit core;
  ns::Duration base_latency = std::chrono::microseconds(5);
  ns::Duration max_clock_offset = std::chrono::milliseconds(1);  // |offset| of every node's clock, at most
  double max_clock_drift = 20e-6;                                // |drift|, at most (20 ppm)
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
  // Every message but the contributions (acknowledgements, credits, reports, requests,
  // proposals, clock probes and samples, hellos) on a priority lane at every port it crosses:
  // a switch's strict-priority class for control traffic (our extension, not the paper's;
  // docs/design/dfs-engines.md). The ports model with fifo sharing (a fair port passes a
  // small message by its finish time already), and a packet network with a lane (the lossless
  // fat-tree's, which then needs LosslessFatTreeOptions::control_lane as well).
  bool control_lane = false;
  // NetworkModel::packet: makes the network (e.g. netio::fabric_model's fat_tree_network()).
  PacketNetworkFactory packet_network;
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
  // Assignment by load with M ≥ 2: how many interval assignments both coordinators (compute
  // nodes 0 and 1, each receiving the inputs' reports over its own connections) decided, and
  // in how many they differed (0: replicas agree).
  std::uint64_t assignments_compared = 0;
  std::uint64_t assignment_mismatches = 0;
  std::string network_summary;  // NetworkModel::packet: PacketNetwork::summary() at the end
};

// Runs one scheduler for system.duration of model time (or system.timeslices), then lets every
// input finish the interval it is in (as the socket run does). Throws netio::Error
// (Errc::invalid_option) for a configuration it cannot model (no capacity in the spec).
SimulationResult simulate(const SimulatedSystem& system, ns::Mode mode, const SimulationOptions& options);

// Throws as simulate() does when `system` cannot be modelled (for a command line's checks).
void check_simulatable(const SimulatedSystem& system, const SimulationOptions& options);

}  // namespace netio::scheduler::simulation
