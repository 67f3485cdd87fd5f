// SPDX-License-Identifier: MIT
#include "simulated_network.hpp"

#include <algorithm>

namespace netio::scheduler::simulation {

SimulatedNetwork::SimulatedNetwork(const SimulatedSystem& system, const SimulationOptions& options)
    : system_(system),
      options_(options),
      network_(system.inputs(), system.computes(), options.sharing),
      timers_(system.inputs()) {
  // A port without its own figure gets the other one (identical network cards).
  auto line_rate = [](const EmulationConfig& e) {
    return e.node_in ? bytes_per_ns(e.node_in) : bytes_per_ns(e.node_out);
  };
  const std::uint32_t n = system_.inputs(), m = system_.computes();
  senders_.reserve(n + m);
  for (std::uint32_t rank = 0; rank < n + m; ++rank) {
    const auto& e = system_.nodes[rank];
    senders_.push_back(
        Sender{e.delay, emulated::SlowdownSchedule(emulated::SlowdownSchedule::node_windows(e), Duration{0})});
  }
  inputs_.resize(n);
  for (ns::InputIndex i = 0; i < n; ++i) {
    const auto& e = system_.nodes[i];
    auto& in = inputs_[i];
    // Connections at the core: data i -> c, its replies, control i -> DDE, its replies, control
    // i -> second replica. At a node's ports: by the peer, the control connections after.
    in.data.reserve(m);
    for (ns::ComputeIndex c = 0; c < m; ++c) in.data.emplace_back(e, c, Flows{c, i * m + c, i});
    in.control.emplace(e, m, Flows{m, 2 * n * m + i, n + i});
    if (m >= 2) in.replica_control.emplace(e, m + 1, Flows{m + 1, 2 * n * m + 2 * n + i, 2 * n + i});
    in.out_capacity = e.node_out ? bytes_per_ns(e.node_out) : line_rate(e);
    if (e.connection_rate) in.transfer_cap = bytes_per_ns(e.connection_rate);
  }
  computes_.resize(m);
  for (ns::ComputeIndex c = 0; c < m; ++c) {
    const auto& e = system_.nodes[n + c];
    auto& compute = computes_[c];
    compute.in_capacity = e.node_in ? bytes_per_ns(e.node_in) : line_rate(e);
    compute.replies.reserve(n);
    for (ns::InputIndex i = 0; i < n; ++i) {
      compute.replies.emplace_back(e, i, Flows{i, n * m + i * m + c, c});
      if (c == 0) compute.control_replies.emplace_back(e, n + i, Flows{n + i, 2 * n * m + n + i, m});
      if (c == 1) compute.control_replies.emplace_back(e, n + i, Flows{n + i, 2 * n * m + 3 * n + i, m + 1});
    }
  }
  if (options_.network == NetworkModel::packet) packet_ = options_.packet_network(system_);
  // The ports model: every node's out= and in= as the emulator shapes them (a node without
  // one is not limited there), and the core. The lossless model keeps its ports in network_.
  out_ports_.resize(system_.inputs() + system_.computes());
  in_ports_.resize(system_.inputs() + system_.computes());
  if (options_.network == NetworkModel::ports) {
    for (std::uint32_t rank = 0; rank < system_.inputs() + system_.computes(); ++rank) {
      const auto e = system_.nodes[rank];
      const auto windows = emulated::SlowdownSchedule::node_windows(e);
      if (e.node_out)
        out_ports_[rank].shape =
            SharedPort<Message>(e.node_out, emulated::SlowdownSchedule(windows, Duration{0}), options_.sharing);
      if (e.node_in)
        in_ports_[rank].shape =
            SharedPort<Message>(e.node_in, emulated::SlowdownSchedule(windows, Duration{0}), options_.sharing);
    }
    // The core: --core, or the spec's core= (as the emulator's, one for every node).
    const RateLimit core = options_.core ? options_.core : system_.nodes[0].core;
    if (core) core_.shape = SharedPort<Message>(core, emulated::SlowdownSchedule{}, options_.sharing);
    if (options_.port_late.kind != DelayKind::none) {
      // Each port's own stream, from its node's seed (the core: node 0's).
      for (std::uint32_t index = 0; index <= core_index(); ++index) {
        const auto rank = index < core_index() ? index % static_cast<std::uint32_t>(out_ports_.size()) : 0;
        port(index).late.emplace(system_.nodes[rank].seed, port_timer_stream + index);
      }
    }
  }
}

void SimulatedNetwork::run_packets() {
  std::optional<Time> next;
  if (!queue_.empty()) next = queue_.top().at;
  if (!timers_.empty() && (!next || timers_.key(timers_.top()).at < *next)) next = timers_.key(timers_.top()).at;
  if (!next && in_flight_ == 0) return;
  // Nothing due here: as long as the messages in flight need, within the run's limit.
  packet_->run_until(next ? *next : Time{options_.time_limit} + Duration{1});
}

void SimulatedNetwork::start() {
  if (options_.network == NetworkModel::lossless) apply_capacities();
}

void SimulatedNetwork::transmit(Link& link, std::uint32_t from, std::uint32_t to, std::uint64_t bytes,
                                bool through_in_port, Message message) {
  if (packet_) {
    // Its way is the packet network's; its arrival an event here, at the network's time.
    message.from = from;
    message.to = to;
    message.bytes = bytes;
    message.stage = Message::Stage::arrived;
    const auto m = messages_.put(message);
    ++in_flight_;
    const bool control = message.kind != Message::Kind::contribution;
    packet_->send(from, to, bytes, channel_of(link), control, [this, m] {
      --in_flight_;
      schedule(packet_->now(), Event::Kind::message, m);
      packet_->stop();  // back here before the network runs past it
    });
    return;
  }
  const Time due = std::max(now_ + draw(link.delay, senders_[from].delay) + senders_[from].slowdown.extra_delay(now_),
                            link.last_due);
  link.last_due = due;
  message.from = from;
  message.to = to;
  message.bytes = bytes;
  message.through_in_port = through_in_port;
  message.priority = options_.control_lane && message.kind != Message::Kind::contribution;
  message.flows = link.flows;
  // An unlimited out-port passes it at once: straight on to the far side.
  const bool out_limited = out_ports_[from].shape.limited();
  message.stage = out_limited ? Message::Stage::out_port : Message::Stage::core;
  const auto m = messages_.put(message);
  schedule(out_limited ? due : due + options_.base_latency, Event::Kind::message, m);
}

void SimulatedNetwork::transmit(Link& link, std::uint32_t from, std::uint32_t to, std::uint64_t bytes,
                                bool through_in_port, std::function<void()> deliver) {
  Message message;
  message.kind = Message::Kind::closure;
  message.subject = closures_.put(std::move(deliver));
  transmit(link, from, to, bytes, through_in_port, message);
}

void SimulatedNetwork::move_on(Message message) {
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
      case Message::Stage::arrived: deliver_message(message); return;
    }
    Port& p = port(next_port);
    if (p.shape.limited()) {
      p.shape.arrive(flow, message.bytes, message, now_, message.priority);
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

void SimulatedNetwork::arm(std::uint32_t index) {
  Port& p = port(index);
  const auto next = p.shape.next_release(now_);
  if (!next || *next >= p.armed_at) return;
  p.armed_at = *next;
  p.waited = *next > now_;
  schedule(*next, Event::Kind::port, index, ++p.generation);
}

Time SimulatedNetwork::release_time(Port& p) {
  if (!p.late) return now_;
  // A release the port waited for comes from its timer: late by a draw, unless the loop is
  // still behind from the last one (then with it).
  if (p.waited && now_ > p.late_until) p.late_until = now_ + draw(*p.late, options_.port_late);
  return std::max(now_, p.late_until);
}

void SimulatedNetwork::serve(std::uint32_t index) {
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
        if (late)
          schedule(leave, Event::Kind::message, messages_.put(message));
        else
          move_on(message);
        break;
      case Message::Stage::in_port:
        message.stage = Message::Stage::arrived;
        if (late)
          schedule(leave, Event::Kind::message, messages_.put(message));
        else
          deliver_message(message);
        break;
      case Message::Stage::arrived: break;  // never waits at a port
    }
  }
  p.waited = false;
  arm(index);
}

void SimulatedNetwork::deliver_message(const Message& message) {
  switch (message.kind) {
    case Message::Kind::contribution:
      receiver_->on_contribution(message.from, message.to - system_.inputs(), message.subject,
                                 message.bytes - contribution_header);
      break;
    case Message::Kind::acknowledgement:
      receiver_->on_acknowledged(message.to, message.from - system_.inputs(), message.subject);
      break;
    case Message::Kind::credit:
      receiver_->on_credit(message.to, message.from - system_.inputs(), message.subject);
      break;
    case Message::Kind::closure: {
      const auto run = closures_.take(static_cast<std::uint32_t>(message.subject));
      run();
      break;
    }
  }
}

std::optional<Event> SimulatedNetwork::next_event() {
  if (packet_) run_packets();
  if (queue_.empty() && timers_.empty()) return std::nullopt;
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
  return event;
}

void SimulatedNetwork::dispatch(const Event& event) {
  now_ = event.at;
  switch (event.kind) {
    case Event::Kind::message: {
      const Message message = messages_.take(event.index);
      move_on(message);
      break;
    }
    case Event::Kind::port:
      if (port(event.index).generation == event.generation) serve(event.index);
      break;
    case Event::Kind::timer: receiver_->on_due(event.index); break;
    case Event::Kind::closure: {
      const auto run = closures_.take(event.index);
      run();
      break;
    }
  }
}

void SimulatedNetwork::apply_capacities() {
  std::optional<Time> next_change;
  auto consider = [&](const emulated::SlowdownSchedule& s) {
    if (const auto t = s.next_change_after(now_); t && (!next_change || *t < *next_change)) next_change = *t;
  };
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
    const auto& in = inputs_[i];
    const auto& slowdown = senders_[i].slowdown;
    const double factor = slowdown.rate_factor(now_);
    network_.set_out_capacity(i, in.out_capacity * factor, now_);
    network_.set_transfer_cap(i, in.transfer_cap * factor, now_);
    consider(slowdown);
  }
  for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
    const auto& slowdown = senders_[system_.inputs() + c].slowdown;
    network_.set_in_capacity(c, computes_[c].in_capacity * slowdown.rate_factor(now_), now_);
    consider(slowdown);
  }
  network_changed();
  if (next_change) at(*next_change, [this] { apply_capacities(); });
}

void SimulatedNetwork::network_changed() {
  const auto generation = ++network_generation_;
  if (const auto finish = network_.next_finish()) {
    at(*finish, [this, generation] {
      if (generation == network_generation_) on_network();
    });
  }
}

void SimulatedNetwork::on_network() {
  for (const Transfer& t : network_.advance(now_)) {
    // The ports were crossed in network_: the delay and the latency remain.
    transmit(inputs_[t.input].data[t.compute], t.input, system_.inputs() + t.compute, contribution_header, false,
             [this, t] { receiver_->on_contribution(t.input, t.compute, t.tag, t.bytes); });
  }
  network_changed();
}

}  // namespace netio::scheduler::simulation
