// SPDX-License-Identifier: MIT
// The simulator's network: the event queue (model time), every connection's delay draws and
// order, the ports a message crosses (the ports model: SharedPort at every node's out= and
// in= and the core; the lossless model: FluidNetwork) and the latency, until a message
// arrives. What arrives it hands to the nodes (NetworkReceiver); the nodes send through it
// (transmit) and ask it for timers and closures at a time. It knows no engine and records
// nothing.
#pragma once

#include "due_timers.hpp"

#include "netio/scheduler/simulation/event_heap.hpp"
#include "netio/scheduler/simulation/fluid_network.hpp"
#include "netio/scheduler/simulation/packed_pool.hpp"
#include "netio/scheduler/simulation/shared_port.hpp"
#include "netio/scheduler/simulation/simulate.hpp"

// The emulator's own delay draws and slow-down windows (netio::network_model), so that
// --delay and --slowdown mean the same in both runs.
#include "netio/emulated/delay_sampler.hpp"
#include "netio/emulated/slowdown_schedule.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netio::scheduler::simulation {

inline double bytes_per_ns(const RateLimit& rate) { return rate.bytes_per_second / 1e9; }

inline Duration draw(emulated::DelayStream& stream, const DelayDistribution& distribution) {
  if (distribution.kind == DelayKind::none) return Duration{0};
  return Duration{static_cast<Duration::rep>(std::llround(stream.next_ns(distribution)))};
}

// The event queue holds small records: most events are a message moving on (message) or a
// port releasing its next buffer (port); whatever else happens runs a closure kept aside
// (closure). The inputs' due timers (timer) wait in DueTimers beside it. The order: time, then
// the order scheduled.
struct Event {
  enum class Kind : std::uint8_t { message, port, timer, closure };
  Time at{0};
  std::uint64_t sequence = 0;
  std::uint64_t generation = 0;  // port: stale when it no longer matches
  std::uint32_t index = 0;       // the message, port, input or closure
  Kind kind = Kind::closure;
};

struct Earlier {
  bool operator()(const Event& a, const Event& b) const { return a.at != b.at ? a.at < b.at : a.sequence < b.sequence; }
};

// What every message is on the wire (the pattern's encodings, docs/design/scheduled-push.md), for
// the ports it crosses: the contributions' header, the replies and the control messages.
constexpr std::uint64_t contribution_header = 24;
constexpr std::uint64_t hello_bytes = 36;
// The timers' lateness draws: streams of their own, apart from every connection's (the
// inputs' due timers: timer_stream + input; the ports' release timers: port_timer_stream + port).
constexpr std::uint64_t timer_stream = std::uint64_t{1} << 40;
constexpr std::uint64_t port_timer_stream = timer_stream + (std::uint64_t{1} << 32);
constexpr std::uint64_t reply_bytes = 12;        // welcome, acknowledgement, credit
constexpr std::uint64_t probe_bytes = 28;        // clock probe and echo, proposal
constexpr std::uint64_t report_bytes = 56 + 16;  // the meta-data report and the request behind it

// A contribution's Message::subject (and the lossless model's tag): time-slice t with its
// delivery number, above 0 when reassigned from a lost compute node (reassignment.hpp).
constexpr unsigned attempt_shift = 56;
constexpr std::uint64_t contribution_subject(TimesliceIndex t, std::uint8_t attempt) {
  return t | std::uint64_t{attempt} << attempt_shift;
}
constexpr TimesliceIndex subject_timeslice(std::uint64_t subject) {
  return subject & ((std::uint64_t{1} << attempt_shift) - 1);
}
constexpr std::uint8_t subject_attempt(std::uint64_t subject) {
  return static_cast<std::uint8_t>(subject >> attempt_shift);
}

// One direction of one connection's number at each port it crosses (SharedPort numbers its
// connections densely): at the sender's out-port, the core and the receiver's in-port.
struct Flows {
  std::uint32_t out = 0;
  std::uint32_t core = 0;
  std::uint32_t in = 0;
};

// One direction of one connection: its delay draws (of its sender's distribution), and its
// order (a buffer never arrives before the one sent before it). Small (72 bytes): a transfer
// touches two links, and at 192 x 192 there are 74,000.
struct Link {
  Link(const EmulationConfig& e, std::uint64_t stream, Flows at_ports) : delay(e.seed, stream), flows(at_ports) {}
  emulated::DelayStream delay;
  Time last_due{0};
  Flows flows;
};

// What a node's sending adds to every message it sends, on any of its links: a draw of its
// delay= and the delay of its slow-down windows.
struct Sender {
  DelayDistribution delay;
  emulated::SlowdownSchedule slowdown;
};

// A message on its way: where it is, and what its arrival does. The frequent ones
// (contributions, acknowledgements, credits) say it in fields; the others run a closure.
// The input and the compute node are the ends (from, to: ranks). Small (40 bytes): the
// messages waiting at the ports are kept in them, 600,000 at 192 x 192.
struct Message {
  enum class Kind : std::uint8_t { contribution, acknowledgement, credit, closure };
  // arrived: released late by its in-port (Port::late), delivered when its event comes
  enum class Stage : std::uint8_t { out_port, core, in_port, arrived };
  Kind kind = Kind::closure;
  Stage stage = Stage::out_port;
  bool through_in_port = true;
  bool priority = false;  // on the ports' priority lane (SimulationOptions::control_lane)
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  Flows flows;
  std::uint64_t bytes = 0;
  // contribution: the time-slice, and its delivery number (attempt) in the top 8 bits
  // (contribution_subject()); acknowledgement, credit: the time-slice; closure: its index in
  // the closures' pool
  std::uint64_t subject = 0;
};

// A SharedPort on the event queue: at most one event armed, for its next release. The
// messages waiting there are kept in it.
//
// With --port-late, as the emulator's port on its event loop: a release the port had to wait
// for comes from a loop timer, which fires late by a draw (`late`, the port's own stream);
// what it releases then leaves at that late time, and so does whatever the port releases
// before it (the loop is behind until then). The shape's schedule stays where it was: its
// bucket has refilled meanwhile, as the emulator's, so a late release takes no capacity from
// the next one. A port's messages leave in the order released (late_until never goes back).
struct Port {
  SharedPort<Message> shape;
  std::uint64_t generation = 0;
  Time armed_at = Time::max();
  bool waited = false;                        // the armed release is later than when it was armed: a loop timer
  std::optional<emulated::DelayStream> late;  // with --port-late (SimulationOptions::port_late)
  Time late_until = Time::min();              // the last late release: the port's loop is behind until then
};

// What the network hands over to the nodes: the frequent messages' arrivals, and the inputs'
// due timers firing. (The other messages run the closure they were sent with.)
class NetworkReceiver {
 public:
  // subject: the time-slice and its delivery number (contribution_subject()).
  virtual void on_contribution(InputIndex i, ComputeIndex c, std::uint64_t subject, std::uint64_t bytes) = 0;
  virtual void on_acknowledged(InputIndex i, ComputeIndex c, TimesliceIndex t) = 0;
  // c returns i's credit for t (Message::subject).
  virtual void on_credit(InputIndex i, ComputeIndex c, TimesliceIndex t) = 0;
  virtual void on_due(InputIndex i) = 0;

 protected:
  ~NetworkReceiver() = default;
};

class SimulatedNetwork {
 public:
  SimulatedNetwork(const SimulatedSystem& system, const SimulationOptions& options);
  SimulatedNetwork(const SimulatedNetwork&) = delete;
  SimulatedNetwork& operator=(const SimulatedNetwork&) = delete;

  // Where arrivals go; before start().
  void connect(NetworkReceiver& receiver) { receiver_ = &receiver; }
  // The lossless model's capacities (and their changes with the slow-down windows).
  void start();

  Time now() const noexcept { return now_; }
  // Runs `run` at `when` (now, if that has passed).
  void at(Time when, std::function<void()> run) { schedule(when, Event::Kind::closure, closures_.put(std::move(run))); }
  // Input i's due timer fires at `when` (now, if that has passed): NetworkReceiver::on_due.
  // A newer one replaces the older.
  void arm_due(InputIndex i, Time when) { timers_.arm(i, DueTimers::Key{std::max(when, now_), sequence_++}); }

  // The connections, one direction each: input i's data connection to compute node c, and its
  // replies; input i's control connections to the DDE (compute node 0) and to the second
  // replica (compute node 1, M >= 2), and each replica's replies on its own (the second's
  // carry its proposals and assignments once the first one's node failed).
  Link& data(InputIndex i, ComputeIndex c) { return inputs_[i].data[c]; }
  Link& reply(ComputeIndex c, InputIndex i) { return computes_[c].replies[i]; }
  Link& control(InputIndex i) { return *inputs_[i].control; }
  Link& replica_control(InputIndex i) { return *inputs_[i].replica_control; }
  Link& control_reply(InputIndex i) { return computes_.front().control_replies[i]; }
  Link& replica_control_reply(InputIndex i) { return computes_[1].control_replies[i]; }

  // A message from node `from` to node `to` (ranks) on `link`: its delay draw (of the sender's
  // delay= and slow-down), the sender's out-port, the core, and (unless a reply, which the
  // emulator does not shape on arrival) the receiver's in-port; then its arrival.
  void transmit(Link& link, std::uint32_t from, std::uint32_t to, std::uint64_t bytes, bool through_in_port,
                Message message);
  void transmit(Link& link, std::uint32_t from, std::uint32_t to, std::uint64_t bytes, bool through_in_port,
                std::function<void()> deliver);

  // The lossless model: input i hands a contribution for compute node c over to its out-port.
  // After one or more, network_changed().
  void post(InputIndex i, ComputeIndex c, std::uint64_t bytes, TimesliceIndex tag) {
    network_.post(i, c, bytes, tag, now_);
  }
  void network_changed();

  // The earliest event (the event queue's or a due timer, as one queue would order them),
  // taken off; none when nothing is left. On a packet network, runs it up to that event
  // first (its deliveries become events).
  std::optional<Event> next_event();
  // NetworkModel::packet: PacketNetwork::summary(); empty otherwise.
  std::string summary() const { return packet_ ? packet_->summary() : std::string{}; }
  // Runs it: the model's time moves to its time.
  void dispatch(const Event& event);

 private:
  // A node's ports, capacities and what its sending adds (Sender), by rank.
  struct InputSide {
    std::vector<Link> data;               // to every compute node
    std::optional<Link> control;          // to the DDE
    std::optional<Link> replica_control;  // to the second replica (compute node 1)
    double out_capacity = FluidNetwork::unlimited_rate;
    double transfer_cap = FluidNetwork::unlimited_rate;
  };
  struct ComputeSide {
    double in_capacity = FluidNetwork::unlimited_rate;
    std::vector<Link> replies;          // to every input, on its data connection
    std::vector<Link> control_replies;  // to every input, on its control connection (the DDE replicas' nodes)
  };

  void schedule(Time when, Event::Kind kind, std::uint32_t index, std::uint64_t generation = 0) {
    queue_.push(Event{std::max(when, now_), sequence_++, generation, index, kind});
  }
  void move_on(Message message);  // the message enters its next stage now
  void arm(std::uint32_t port);
  void serve(std::uint32_t port);
  Time release_time(Port& p);  // when what p releases now leaves (now_, or later: Port::late)
  void deliver_message(const Message& message);
  Port& port(std::uint32_t index) {
    return index < out_ports_.size()       ? out_ports_[index]
           : index < 2 * out_ports_.size() ? in_ports_[index - out_ports_.size()]
                                           : core_;
  }
  std::uint32_t out_port_index(std::uint32_t rank) const { return rank; }
  std::uint32_t in_port_index(std::uint32_t rank) const { return static_cast<std::uint32_t>(out_ports_.size()) + rank; }
  std::uint32_t core_index() const { return static_cast<std::uint32_t>(2 * out_ports_.size()); }
  void apply_capacities();
  void on_network();
  void run_packets();  // the packet network up to the next event here (or a delivery)
  // Which of the packet network's channels a link is on: the control connections' flows are
  // numbered after the data connections' and their replies' (2 N M of them) at the core.
  std::uint32_t channel_of(const Link& link) const {
    return link.flows.core >= 2 * system_.inputs() * system_.computes() ? 1 : 0;
  }

  const SimulatedSystem& system_;
  const SimulationOptions& options_;
  NetworkReceiver* receiver_ = nullptr;
  std::vector<Sender> senders_;  // by rank
  std::vector<InputSide> inputs_;
  std::vector<ComputeSide> computes_;
  FluidNetwork network_;
  std::vector<Port> out_ports_;  // by rank (inputs, then compute nodes)
  std::vector<Port> in_ports_;
  Port core_;
  PackedPool<Message> messages_;  // on their way between ports (delay, latency), by index
  PackedPool<std::function<void()>> closures_;
  EventHeap<Event, Earlier> queue_;
  std::uint64_t sequence_ = 0;
  DueTimers timers_;  // the inputs' due timers, ordered with queue_
  Time now_{0};
  std::uint64_t network_generation_ = 0;
  std::unique_ptr<PacketNetwork> packet_;  // NetworkModel::packet
  std::uint64_t in_flight_ = 0;            // messages in the packet network
};

}  // namespace netio::scheduler::simulation
