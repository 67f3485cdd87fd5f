// SPDX-License-Identifier: MIT
#include "netio/scheduler/simulation/simulate.hpp"

#include "due_timers.hpp"
#include "run_recorder.hpp"
#include "netio/scheduler/simulation/event_heap.hpp"
#include "netio/scheduler/simulation/packed_pool.hpp"

// The emulator's own delay draws and slow-down windows (pure parts of the emulated
// back-end), so that --delay and --slowdown mean the same in both runs.
#include "netio/emulated/delay_sampler.hpp"
#include "netio/emulated/slowdown_schedule.hpp"

#include "netio/error.hpp"
#include "netio/scheduler/compute_node.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/credits.hpp"
#include "netio/scheduler/deterministic_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace netio::scheduler::simulation {

namespace {

using ns::Duration;
using ns::Time;

[[noreturn]] void reject(const std::string& what) {
  throw Error(Errc::invalid_option, what);
}

// A node's clock: it reads true + offset + drift × true.
struct NodeClock {
  Duration offset{0};
  double drift = 0;

  Time local(Time t) const {
    return t + offset + Duration{static_cast<Duration::rep>(std::llround(drift * static_cast<double>(t.count())))};
  }
  // The first true time at which this clock reads `reading` or more.
  Time true_time(Time reading) const {
    Time t{static_cast<Duration::rep>(std::llround(static_cast<double>((reading - offset).count()) / (1.0 + drift)))};
    while (local(t) < reading) t += Duration{1};
    return t;
  }
};

double bytes_per_ns(const RateLimit& rate) { return rate.bytes_per_second / 1e9; }

Duration draw(emulated::DelayStream& stream, const DelayDistribution& distribution) {
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
  bool operator()(const Event& a, const Event& b) const {
    return a.at != b.at ? a.at < b.at : a.sequence < b.sequence;
  }
};

// What every message is on the wire (the pattern's encodings, docs/design/scheduled-push.md), for
// the ports it crosses: the contributions' header, the replies and the control messages.
constexpr std::uint64_t kContributionHeader = 24;
constexpr std::uint64_t kHelloBytes = 36;
// The timers' lateness draws: streams of their own, apart from every connection's (the
// inputs' due timers: kTimerStream + input; the ports' release timers: kPortTimerStream + port).
constexpr std::uint64_t kTimerStream = std::uint64_t{1} << 40;
constexpr std::uint64_t kPortTimerStream = kTimerStream + (std::uint64_t{1} << 32);
constexpr std::uint64_t kReplyBytes = 12;  // welcome, acknowledgement, credit
constexpr std::uint64_t kProbeBytes = 28;  // clock probe and echo, proposal
constexpr std::uint64_t kReportBytes = 48 + 16;  // the meta-data report and the request behind it

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
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  Flows flows;
  std::uint64_t bytes = 0;
  // contribution, acknowledgement: the time-slice; closure: its index in the closures' pool
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
  bool waited = false;  // the armed release is later than when it was armed: a loop timer
  std::optional<emulated::DelayStream> late;  // with --port-late (SimulationOptions::port_late)
  Time late_until = Time::min();  // the last late release: the port's loop is behind until then
};

class Simulator {
 public:
  Simulator(const SimulatedSystem& system, ns::Mode mode, const SimulationOptions& options);
  SimulationResult run();

 private:
  struct Input {
    Input(const ns::SchedulerConfig& config, ns::InputIndex i, ns::Mode mode) : node(config, i, mode) {}
    ns::InputNode node;
    NodeClock clock;
    Sender sender;
    std::vector<Link> data;  // to every compute node
    std::optional<Link> control;  // to the DDE
    std::optional<Link> replica_control;  // to the second replica (compute node 1)
    std::optional<emulated::DelayStream> late;  // how late its due timer fires (draws of options' timer_late)
    std::map<ns::IntervalIndex, std::optional<ns::IntervalPlan>> plans;  // started, not reported
    double out_capacity = FluidNetwork::kUnlimited;
    double transfer_cap = FluidNetwork::kUnlimited;
  };
  struct Held {
    Time first{0};
    Time last{0};
    std::uint64_t bytes = 0;
    bool present = false;
  };
  struct Compute {
    Compute(const ns::SchedulerConfig& config, ns::ComputeIndex c, std::uint32_t credits) : node(config, c, credits) {}
    ns::ComputeNode node;
    NodeClock clock;
    Sender sender;
    double in_capacity = FluidNetwork::kUnlimited;
    std::vector<Link> replies;          // to every input, on its data connection
    std::vector<Link> control_replies;  // to every input, on its control connection (the DDE's node)
    // What it holds, by time-slice: its k-th (c + k M) at held[k - held_base]. Handed over
    // in order, so the front goes first: no search, no tree.
    std::deque<Held> held;
    std::uint64_t held_base = 0;
    std::uint64_t held_bytes = 0;
    std::uint64_t peak_held_bytes = 0;
    std::uint64_t handed_over = 0;
  };

  void schedule(Time when, Event::Kind kind, std::uint32_t index, std::uint64_t generation = 0) {
    queue_.push(Event{std::max(when, now_), sequence_++, generation, index, kind});
  }
  void at(Time when, std::function<void()> run) {
    schedule(when, Event::Kind::closure, closures_.put(std::move(run)));
  }
  void dispatch(const Event& event);

  // A message from node `from` to node `to` (ranks) on `link`: its delay draw, the sender's
  // out-port, the core, and (unless a reply, which the emulator does not shape on arrival)
  // the receiver's in-port; then `deliver`.
  void transmit(Link& link, std::uint32_t from, std::uint32_t to, std::uint64_t bytes, bool through_in_port,
                const Sender& sender, Message message);
  void transmit(Link& link, std::uint32_t from, std::uint32_t to, std::uint64_t bytes, bool through_in_port,
                const Sender& sender, std::function<void()> deliver);
  void move_on(Message message);  // the message enters its next stage now
  void arm(std::uint32_t port);
  void serve(std::uint32_t port);
  Time release_time(Port& p);  // when what p releases now leaves (now_, or later: Port::late)
  void deliver_message(const Message& message);
  Port& port(std::uint32_t index) {
    return index < out_ports_.size() ? out_ports_[index]
         : index < 2 * out_ports_.size() ? in_ports_[index - out_ports_.size()] : core_;
  }
  std::uint32_t out_port_index(std::uint32_t rank) const { return rank; }
  std::uint32_t in_port_index(std::uint32_t rank) const { return static_cast<std::uint32_t>(out_ports_.size()) + rank; }
  std::uint32_t core_index() const { return static_cast<std::uint32_t>(2 * out_ports_.size()); }

  void start();
  void apply_capacities();
  void network_changed();
  void on_network();
  // Input side, as TimesliceSender::State.
  void drive(ns::InputIndex i);
  void arm(ns::InputIndex i, Time due);
  void note_plan(Input& in, ns::TimesliceIndex t);
  void report(ns::InputIndex i, const ns::IntervalCompletion& done);
  void on_acknowledged(ns::InputIndex i, ns::TimesliceIndex t);
  void on_credit(ns::InputIndex i, ns::ComputeIndex c);
  void on_proposal(ns::InputIndex i, const ns::Proposal& proposal);
  void send_clock_probe(ns::InputIndex i, std::uint32_t sequence, std::optional<Duration> round_trip);
  // Compute side, as TimesliceReceiver::State and DdeService::State.
  void on_contribution(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t, std::uint64_t bytes);
  void deliver(ns::ComputeIndex c);
  void on_report(const ns::IntervalCompletion& done);
  void send_proposals(const std::vector<ns::AddressedProposal>& proposals);
  void on_replica_report(const ns::IntervalCompletion& done);
  void send_clock_sample(ns::InputIndex i, const ns::ClockProbe& sample);
  void compare_with_other_replica(ns::InputIndex input, const ns::Proposal& proposal);
  void sample_fill();
  void end_of_duration();
  void check_done();
  std::uint64_t share_of(ns::ComputeIndex c, std::uint64_t count) const {
    const auto m = config_.compute_count;
    return count / m + (count % m > c ? 1 : 0);
  }

  SimulatedSystem system_;
  ns::Mode mode_;
  SimulationOptions options_;
  ns::SchedulerConfig config_;
  std::uint32_t credits_;
  FluidNetwork network_;
  std::vector<Input> inputs_;
  std::vector<Compute> computes_;
  std::optional<ns::DeterministicEngine> dde_;  // on compute node 0 (DFS)
  // A second replica on compute node 1 (DFS, M ≥ 2): fed the same reports over its own
  // connections, so they reach it at other times; what it would propose is compared with
  // what the first one proposed, not sent.
  std::optional<ns::DeterministicEngine> replica_;
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
  std::uint64_t limit_ = UINT64_MAX;  // inputs send the time-slices below it
  bool limit_set_ = false;
  bool done_ = false;
  std::string error_;
  RunRecorder recorder_;
};

Simulator::Simulator(const SimulatedSystem& system, ns::Mode mode, const SimulationOptions& options)
    : system_(system),
      mode_(mode),
      options_(options),
      config_(system.scheduler),
      credits_(ns::credits_per_input(system.buffer_bytes, system.inputs(), system.contribution_bytes)),
      network_(system.inputs(), system.computes(), options.sharing),
      timers_(system.inputs()),
      recorder_(system.buffer_bytes, config_.timeslices_in_interval(), system.warmup_intervals) {
  check_simulatable(system_, options_);
    // Clocks: one draw of offset and drift per node, from the spec's seed.
  emulated::Xoshiro256 clocks(system_.nodes[0].seed ^ 0x636c6f636b73ULL);  // "clocks"
  auto draw_clock = [&] {
    NodeClock clock;
    clock.offset = Duration{static_cast<Duration::rep>(
        std::llround((2 * clocks.uniform_open() - 1) * static_cast<double>(options_.max_clock_offset.count())))};
    clock.drift = (2 * clocks.uniform_open() - 1) * options_.max_clock_drift;
    return clock;
  };
  // A port without its own figure gets the other one (identical network cards).
  auto line_rate = [](const EmulationConfig& e) { return e.node_in ? bytes_per_ns(e.node_in) : bytes_per_ns(e.node_out); };

  inputs_.reserve(system_.inputs());
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
    const auto e = system_.nodes[i];
    Input& in = inputs_.emplace_back(config_, i, mode_);
    in.clock = draw_clock();
    if (options_.timer_late.kind != DelayKind::none) in.late.emplace(e.seed, kTimerStream + i);
    in.sender = Sender{e.delay, emulated::SlowdownSchedule(emulated::SlowdownSchedule::node_windows(e), Duration{0})};
    // Connections at the core: data i -> c, its replies, control i -> DDE, its replies, control
    // i -> second replica. At a node's ports: by the peer, the control connections after.
    const std::uint32_t n = system_.inputs(), m = system_.computes();
    for (ns::ComputeIndex c = 0; c < m; ++c) in.data.emplace_back(e, c, Flows{c, i * m + c, i});
    in.control.emplace(e, m, Flows{m, 2 * n * m + i, n + i});
    if (m >= 2) in.replica_control.emplace(e, m + 1, Flows{m + 1, 2 * n * m + 2 * n + i, 2 * n + i});
    in.out_capacity = e.node_out ? bytes_per_ns(e.node_out) : line_rate(e);
    if (e.connection_rate) in.transfer_cap = bytes_per_ns(e.connection_rate);
  }
  computes_.reserve(system_.computes());
  for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
    const auto e = system_.nodes[system_.inputs() + c];
    Compute& compute = computes_.emplace_back(config_, c, credits_);
    compute.clock = draw_clock();
    compute.sender = Sender{e.delay, emulated::SlowdownSchedule(emulated::SlowdownSchedule::node_windows(e), Duration{0})};
    compute.in_capacity = e.node_in ? bytes_per_ns(e.node_in) : line_rate(e);
    const std::uint32_t n = system_.inputs(), m = system_.computes();
    for (ns::InputIndex i = 0; i < n; ++i) {
      compute.replies.emplace_back(e, i, Flows{i, n * m + i * m + c, c});
      if (c == 0) compute.control_replies.emplace_back(e, n + i, Flows{n + i, 2 * n * m + n + i, m});
    }
  }
  // The ports model: every node's out= and in= as the emulator shapes them (a node without
  // one is not limited there), and the core. The lossless model keeps its ports in network_.
  out_ports_.resize(system_.inputs() + system_.computes());
  in_ports_.resize(system_.inputs() + system_.computes());
  if (options_.network == NetworkModel::ports) {
    for (std::uint32_t rank = 0; rank < system_.inputs() + system_.computes(); ++rank) {
      const auto e = system_.nodes[rank];
      const auto windows = emulated::SlowdownSchedule::node_windows(e);
      if (e.node_out) out_ports_[rank].shape = SharedPort<Message>(e.node_out, emulated::SlowdownSchedule(windows, Duration{0}), options_.sharing);
      if (e.node_in) in_ports_[rank].shape = SharedPort<Message>(e.node_in, emulated::SlowdownSchedule(windows, Duration{0}), options_.sharing);
    }
    // The core: --core, or the spec's core= (as the emulator's, one for every node).
    const RateLimit core = options_.core ? options_.core : system_.nodes[0].core;
    if (core) core_.shape = SharedPort<Message>(core, emulated::SlowdownSchedule{}, options_.sharing);
    if (options_.port_late.kind != DelayKind::none) {
      // Each port's own stream, from its node's seed (the core: node 0's).
      for (std::uint32_t index = 0; index <= core_index(); ++index) {
        const auto rank = index < core_index() ? index % static_cast<std::uint32_t>(out_ports_.size()) : 0;
        port(index).late.emplace(system_.nodes[rank].seed, kPortTimerStream + index);
      }
    }
  }
  if (mode_ == ns::Mode::dfs) dde_.emplace(config_);
  if (mode_ == ns::Mode::dfs && system_.computes() >= 2) replica_.emplace(config_);
}

void Simulator::start() {
  if (options_.network == NetworkModel::lossless) apply_capacities();
  if (system_.timeslices) {
    limit_ = *system_.timeslices;
    limit_set_ = true;
  } else {
    at(Time{system_.duration}, [this] { end_of_duration(); });
  }
  const std::uint32_t n = system_.inputs();
  for (ns::InputIndex i = 0; i < n; ++i) {
    auto& in = inputs_[i];
    // The hello on every data connection; the welcome comes back as a reply with the credits.
    for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
      transmit(in.data[c], i, n + c, kHelloBytes, true, in.sender, [this, i, c, n] {
        transmit(computes_[c].replies[i], n + c, i, kReplyBytes, false, computes_[c].sender, [this, i, c] {
          inputs_[i].node.grant(c, credits_);
          drive(i);
        });
      });
    }
    if (dde_) {
      // The start handshake once the control connection is up.
      send_clock_probe(i, 0, std::nullopt);
    }
  }
  at(Time{system_.sample_period}, [this] { sample_fill(); });
}

void Simulator::transmit(Link& link, std::uint32_t from, std::uint32_t to, std::uint64_t bytes, bool through_in_port,
                         const Sender& sender, Message message) {
  const Time due = std::max(now_ + draw(link.delay, sender.delay) + sender.slowdown.extra_delay(now_), link.last_due);
  link.last_due = due;
  message.from = from;
  message.to = to;
  message.bytes = bytes;
  message.through_in_port = through_in_port;
  message.flows = link.flows;
  // An unlimited out-port passes it at once: straight on to the far side.
  const bool out_limited = out_ports_[from].shape.limited();
  message.stage = out_limited ? Message::Stage::out_port : Message::Stage::core;
  const auto m = messages_.put(message);
  schedule(out_limited ? due : due + options_.base_latency, Event::Kind::message, m);
}

void Simulator::transmit(Link& link, std::uint32_t from, std::uint32_t to, std::uint64_t bytes, bool through_in_port,
                         const Sender& sender, std::function<void()> deliver) {
  Message message;
  message.kind = Message::Kind::closure;
  message.subject = closures_.put(std::move(deliver));
  transmit(link, from, to, bytes, through_in_port, sender, message);
}

void Simulator::move_on(Message message) {
  // Through the ports it has left to cross, as far as they let it go now.
  for (;;) {
    std::uint32_t next_port = 0;
    std::uint32_t flow = 0;
    switch (message.stage) {
      case Message::Stage::out_port:
        next_port = out_port_index(message.from);
        flow = message.flows.out;
        break;
      case Message::Stage::core:
        next_port = core_index();
        flow = message.flows.core;
        break;
      case Message::Stage::in_port:
        if (!message.through_in_port) {
          deliver_message(message);
          return;
        }
        next_port = in_port_index(message.to);
        flow = message.flows.in;
        break;
      case Message::Stage::arrived:
        deliver_message(message);
        return;
    }
    Port& p = port(next_port);
    if (p.shape.limited()) {
      p.shape.arrive(flow, message.bytes, message, now_);
      arm(next_port);
      return;
    }
    if (message.stage == Message::Stage::in_port) {
      deliver_message(message);
      return;
    }
    // An unlimited port: the next stage at once (after the out-port, the latency first).
    if (message.stage == Message::Stage::out_port) {
      message.stage = Message::Stage::core;
      schedule(now_ + options_.base_latency, Event::Kind::message, messages_.put(message));
      return;
    }
    message.stage = Message::Stage::in_port;
  }
}

void Simulator::arm(std::uint32_t index) {
  Port& p = port(index);
  const auto next = p.shape.next_release(now_);
  if (!next || *next >= p.armed_at) return;
  p.armed_at = *next;
  p.waited = *next > now_;
  schedule(*next, Event::Kind::port, index, ++p.generation);
}

Time Simulator::release_time(Port& p) {
  if (!p.late) return now_;
  // A release the port waited for comes from its timer: late by a draw, unless the loop is
  // still behind from the last one (then with it).
  if (p.waited && now_ > p.late_until) p.late_until = now_ + draw(*p.late, options_.port_late);
  return std::max(now_, p.late_until);
}

void Simulator::serve(std::uint32_t index) {
  Port& p = port(index);
  p.armed_at = Time::max();
  // Late (Port::late): on through the event queue at that time, in the order released.
  const Time leave = release_time(p);
  const bool late = leave > now_ || (p.late && now_ == p.late_until);
  for (auto next = p.shape.next_release(now_); next && *next <= now_; next = p.shape.next_release(now_)) {
    Message message = p.shape.release(now_);
    switch (message.stage) {
      case Message::Stage::out_port:
        message.stage = Message::Stage::core;
        schedule(leave + options_.base_latency, Event::Kind::message, messages_.put(message));
        break;
      case Message::Stage::core:
        message.stage = Message::Stage::in_port;
        if (late) schedule(leave, Event::Kind::message, messages_.put(message));
        else move_on(message);
        break;
      case Message::Stage::in_port:
        message.stage = Message::Stage::arrived;
        if (late) schedule(leave, Event::Kind::message, messages_.put(message));
        else deliver_message(message);
        break;
      case Message::Stage::arrived: break;  // never waits at a port
    }
  }
  p.waited = false;
  arm(index);
}

void Simulator::deliver_message(const Message& message) {
  switch (message.kind) {
    case Message::Kind::contribution:
      on_contribution(message.from, message.to - system_.inputs(), message.subject, message.bytes - kContributionHeader);
      break;
    case Message::Kind::acknowledgement: on_acknowledged(message.to, message.subject); break;
    case Message::Kind::credit: on_credit(message.to, message.from - system_.inputs()); break;
    case Message::Kind::closure: {
      const auto run = closures_.take(static_cast<std::uint32_t>(message.subject));
      run();
      break;
    }
  }
}

void Simulator::dispatch(const Event& event) {
  switch (event.kind) {
    case Event::Kind::message: {
      const Message message = messages_.take(event.index);
      move_on(message);
      break;
    }
    case Event::Kind::port:
      if (port(event.index).generation == event.generation) serve(event.index);
      break;
    case Event::Kind::timer: drive(event.index); break;
    case Event::Kind::closure: {
      const auto run = closures_.take(event.index);
      run();
      break;
    }
  }
}

void Simulator::apply_capacities() {
  std::optional<Time> next_change;
  auto consider = [&](const emulated::SlowdownSchedule& s) {
    if (const auto t = s.next_change_after(now_); t && (!next_change || *t < *next_change)) next_change = *t;
  };
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
    const auto& in = inputs_[i];
    const double factor = in.sender.slowdown.rate_factor(now_);
    network_.set_out_capacity(i, in.out_capacity * factor, now_);
    network_.set_transfer_cap(i, in.transfer_cap * factor, now_);
    consider(in.sender.slowdown);
  }
  for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
    const auto& compute = computes_[c];
    network_.set_in_capacity(c, compute.in_capacity * compute.sender.slowdown.rate_factor(now_), now_);
    consider(compute.sender.slowdown);
  }
  network_changed();
  if (next_change) at(*next_change, [this] { apply_capacities(); });
}

void Simulator::network_changed() {
  const auto generation = ++network_generation_;
  if (const auto finish = network_.next_finish()) {
    at(*finish, [this, generation] {
      if (generation == network_generation_) on_network();
    });
  }
}

void Simulator::on_network() {
  for (const Transfer& t : network_.advance(now_)) {
    auto& in = inputs_[t.input];
    // The ports were crossed in network_: the delay and the latency remain.
    transmit(in.data[t.compute], t.input, system_.inputs() + t.compute, kContributionHeader, false, in.sender,
             [this, t] { on_contribution(t.input, t.compute, t.tag, t.bytes); });
  }
  network_changed();
}

void Simulator::drive(ns::InputIndex i) {
  using What = ns::InputNode::Next::What;
  auto& in = inputs_[i];
  bool posted = false;
  for (;;) {
    const Time local = in.clock.local(now_);
    const auto next = in.node.next(local);
    if (next.what == What::wait_until) {
      arm(i, next.due);
      break;
    }
    if (next.what == What::skip) reject("simulation: a compute node was lost, which the model never does");
    if (next.what != What::send) break;   // a credit or an acknowledgement calls again
    if (next.timeslice >= limit_) break;  // not pushed: the run ends below it
    in.node.on_sent(next.timeslice, local);
    if (const auto sample = in.node.take_clock_sample()) send_clock_sample(i, *sample);
    note_plan(in, next.timeslice);
    if (options_.network == NetworkModel::lossless) {
      network_.post(i, next.compute, system_.contribution_bytes, next.timeslice, now_);
      posted = true;
    } else {
      const auto c = next.compute;
      const auto t = next.timeslice;
      Message message;
      message.kind = Message::Kind::contribution;
      message.subject = t;
      transmit(in.data[c], i, system_.inputs() + c, kContributionHeader + system_.contribution_bytes, true, in.sender,
               message);
    }
  }
  if (posted) network_changed();
}

void Simulator::arm(ns::InputIndex i, Time due) {
  auto& in = inputs_[i];
  // The pattern's due timer: a newer one replaces the older.
  const Duration late = in.late ? draw(*in.late, options_.timer_late) : Duration{0};
  timers_.arm(i, DueTimers::Key{std::max(in.clock.true_time(due) + late, now_), sequence_++});
}

void Simulator::note_plan(Input& in, ns::TimesliceIndex t) {
  const auto* engine = in.node.engine();
  if (engine == nullptr) return;
  const auto j = engine->layout().interval_of(t);
  if (in.plans.contains(j)) return;
  auto plan = engine->plan(j);
  if (plan && plan->best_effort) plan.reset();  // the DDE's fallback: no pace to record
  in.plans.emplace(j, plan);
}

void Simulator::report(ns::InputIndex i, const ns::IntervalCompletion& done) {
  auto& in = inputs_[i];
  IntervalRecord r;
  r.input = i;
  r.interval = done.report.interval;
  r.actual_start = in.clock.true_time(done.report.start);
  r.actual_duration = done.report.duration;
  if (const auto it = in.plans.find(done.report.interval); it != in.plans.end()) {
    if (it->second) {
      r.proposed_start = in.clock.true_time(it->second->start);
      r.proposed_duration = it->second->duration;
    }
    in.plans.erase(in.plans.begin(), std::next(it));
  }
  recorder_.interval(r);
  if (!dde_) return;
  // The report and the request, one after the other on the control connection.
  transmit(*in.control, i, system_.inputs(), kReportBytes, true, in.sender, [this, done] { on_report(done); });
  if (replica_) {
    transmit(*in.replica_control, i, system_.inputs() + 1, kReportBytes, true, in.sender,
             [this, done] { on_replica_report(done); });
  }
}

void Simulator::on_acknowledged(ns::InputIndex i, ns::TimesliceIndex t) {
  auto& in = inputs_[i];
  if (auto done = in.node.on_acknowledged(t, in.clock.local(now_))) report(i, *done);
  drive(i);
}

void Simulator::on_credit(ns::InputIndex i, ns::ComputeIndex c) {
  inputs_[i].node.on_credit(c);
  drive(i);
  check_done();
}

void Simulator::on_proposal(ns::InputIndex i, const ns::Proposal& proposal) {
  (void)inputs_[i].node.on_proposal(proposal);
  drive(i);
}

void Simulator::send_clock_sample(ns::InputIndex i, const ns::ClockProbe& sample) {
  // On the control connections, as the pattern sends it, to both replicas.
  if (!dde_) return;
  auto& in = inputs_[i];
  transmit(*in.control, i, system_.inputs(), kProbeBytes, true, in.sender,
           [this, sample] { dde_->on_clock_sample(sample, computes_.front().clock.local(now_)); });
  if (replica_) {
    transmit(*in.replica_control, i, system_.inputs() + 1, kProbeBytes, true, in.sender,
             [this, sample] { replica_->on_clock_sample(sample, computes_[1].clock.local(now_)); });
  }
}

void Simulator::send_clock_probe(ns::InputIndex i, std::uint32_t sequence, std::optional<Duration> round_trip) {
  auto& in = inputs_[i];
  const ns::ClockProbe probe{i, sequence, in.clock.local(now_), round_trip};
  transmit(*in.control, i, system_.inputs(), kProbeBytes, true, in.sender, [this, probe] {
    const auto echo = dde_->on_clock_probe(probe, computes_.front().clock.local(now_));
    auto& dde_node = computes_.front();
    transmit(dde_node.control_replies[probe.input], system_.inputs(), probe.input, kProbeBytes, false, dde_node.sender,
             [this, probe, echo] {
               if (echo.sequence == 0) {
                 send_clock_probe(probe.input, 1, inputs_[probe.input].clock.local(now_) - echo.probe_sent_at);
               }
             });
  });
}

void Simulator::on_contribution(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t, std::uint64_t bytes) {
  auto& compute = computes_[c];
  const auto arrival = compute.node.on_contribution(i, t, compute.clock.local(now_));
  if (arrival != ns::ComputeNode::Arrival::accepted && arrival != ns::ComputeNode::Arrival::completes) {
    reject(fmt::format("simulation: compute node {} refused input {}'s contribution to time-slice {}", c, i, t));
  }
  const std::uint64_t k = t / config_.compute_count - compute.held_base;
  if (k >= compute.held.size()) compute.held.resize(k + 1);
  auto& held = compute.held[k];
  held.present = true;
  if (held.bytes == 0) held.first = now_;
  held.last = now_;
  held.bytes += bytes;
  compute.held_bytes += bytes;
  compute.peak_held_bytes = std::max(compute.peak_held_bytes, compute.held_bytes);
  if (mode_ == ns::Mode::dfs) {
    Message ack;
    ack.kind = Message::Kind::acknowledgement;
    ack.subject = t;
    transmit(compute.replies[i], system_.inputs() + c, i, kReplyBytes, false, compute.sender, ack);
  }
  deliver(c);
}

void Simulator::deliver(ns::ComputeIndex c) {
  auto& compute = computes_[c];
  while (const auto ready = compute.node.next_ready(compute.clock.local(now_), Duration{0})) {
    const auto t = ready->timeslice;
    Held& held = compute.held[t / config_.compute_count - compute.held_base];  // complete: present
    TimesliceRecord r;
    r.timeslice = t;
    r.compute = c;
    r.complete = ready->complete;
    r.first_arrival = held.first;
    r.last_arrival = held.last;
    r.handed_over = now_;
    r.bytes = held.bytes;
    recorder_.timeslice(r);
    compute.held_bytes -= held.bytes;
    held = Held{};
    while (!compute.held.empty() && !compute.held.front().present) {
      compute.held.pop_front();
      ++compute.held_base;
    }
    ++compute.handed_over;
    for (const ns::InputIndex i : compute.node.release(t)) {
      Message credit;
      credit.kind = Message::Kind::credit;
      transmit(compute.replies[i], system_.inputs() + c, i, kReplyBytes, false, compute.sender, credit);
    }
  }
  check_done();
}

void Simulator::on_report(const ns::IntervalCompletion& done) {
  const Time local = computes_.front().clock.local(now_);
  send_proposals(dde_->on_report(done.report, local));
  send_proposals(dde_->on_request(done.request));
}

void Simulator::on_replica_report(const ns::IntervalCompletion& done) {
  const Time local = computes_[1].clock.local(now_);
  auto proposals = replica_->on_report(done.report, local);
  for (auto& p : replica_->on_request(done.request)) proposals.push_back(p);
  for (const auto& [input, proposal] : proposals) compare_with_other_replica(input, proposal);
}

void Simulator::compare_with_other_replica(ns::InputIndex input, const ns::Proposal& proposal) {
  recorder_.proposed(input, proposal.interval, inputs_[input].clock.true_time(proposal.start));
}

void Simulator::send_proposals(const std::vector<ns::AddressedProposal>& proposals) {
  for (const auto& [input, proposal] : proposals) {
    if (replica_) compare_with_other_replica(input, proposal);
    auto& dde_node = computes_.front();
    transmit(dde_node.control_replies[input], system_.inputs(), input, kProbeBytes, false, dde_node.sender,
             [this, i = input, p = proposal] { on_proposal(i, p); });
  }
}

void Simulator::sample_fill() {
  if (done_) return;
  for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) recorder_.fill(now_, c, computes_[c].held_bytes);
  at(now_ + system_.sample_period, [this] { sample_fill(); });
}

void Simulator::end_of_duration() {
  // As the socket run: the furthest any input has come, rounded up to a whole interval, plus one.
  std::uint64_t furthest = 0;
  for (const auto& in : inputs_) furthest = std::max(furthest, in.node.sent_count());
  const auto interval = config_.timeslices_in_interval();
  limit_ = (furthest / interval + 2) * interval;
  limit_set_ = true;
  check_done();
}

void Simulator::check_done() {
  // As the socket run ends: every time-slice handed over, and every input holds all its
  // credits again (so it has every acknowledgement, and reported its last interval).
  if (!limit_set_ || done_) return;
  for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
    if (computes_[c].handed_over < share_of(c, limit_)) return;
  }
  for (const auto& in : inputs_) {
    for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
      if (in.node.available(c) != in.node.granted(c)) return;
    }
  }
  done_ = true;
}

SimulationResult Simulator::run() {
  SimulationResult result;
  try {
    start();
    while (!done_ && (!queue_.empty() || !timers_.empty())) {
      // The earlier of the queue's next event and the next due timer: the order one queue would give.
      Event event;
      if (!timers_.empty() &&
          (queue_.empty() || timers_.key(timers_.top()) < DueTimers::Key{queue_.top().at, queue_.top().sequence})) {
        const std::uint32_t i = timers_.top();
        event = Event{timers_.key(i).at, timers_.key(i).sequence, 0, i, Event::Kind::timer};
        timers_.pop();
      } else {
        event = queue_.top();
        queue_.pop();
      }
      if (event.at > Time{options_.time_limit}) {
        result.error = fmt::format("the simulation did not finish within {} s of model time",
                                   std::chrono::duration_cast<std::chrono::seconds>(options_.time_limit).count());
        break;
      }
      now_ = event.at;
      dispatch(event);
      ++result.events;
      if (result.events % 4096 == 0 && options_.should_stop && options_.should_stop()) {
        result.interrupted = true;
        break;
      }
    }
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  if (!done_ && result.error.empty() && !result.interrupted) {
    std::uint64_t handed_over = 0;
    for (const auto& c : computes_) handed_over += c.handed_over;
    result.error = fmt::format("the simulation stalled at {:.3f} s: {} of {} time-slices handed over",
                               static_cast<double>(now_.count()) / 1e9, handed_over, limit_);
  }
  result.end = now_;
  for (const auto& c : computes_) recorder_.peak(c.peak_held_bytes);
  recorder_.finish(result, dde_ ? std::optional{dde_->fallback().stats()} : std::nullopt);
  return result;
}

}  // namespace

const char* to_string(NetworkModel model) noexcept { return model == NetworkModel::lossless ? "lossless" : "ports"; }

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
  if (options.port_late.kind != DelayKind::none && options.network != NetworkModel::ports) {
    reject("--port-late is a part of the ports model (--network ports), not of the lossless one");
  }
}

SimulationResult simulate(const SimulatedSystem& system, ns::Mode mode, const SimulationOptions& options) {
  Simulator simulator(system, mode, options);
  return simulator.run();
}

}  // namespace netio::scheduler::simulation
