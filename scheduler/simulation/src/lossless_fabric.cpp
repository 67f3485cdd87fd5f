// SPDX-License-Identifier: MIT
#include "netio/scheduler/simulation/lossless_fabric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace netio::scheduler::simulation {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::int64_t thousandths_of_ps_per_byte(double bytes_per_second) {
  return static_cast<std::int64_t>(std::llround(1e15 / bytes_per_second));
}

constexpr std::uint64_t unlimited_credits = std::numeric_limits<std::uint64_t>::max() / 2;

}  // namespace

LosslessFabric::LosslessFabric(const LosslessFabricConfig& config)
    : config_(config), hosts_(config.leaves * config.hosts_per_leaf), draws_(config.seed) {
  auto require = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(what);
  };
  require(config.leaves > 0 && config.hosts_per_leaf > 0 && config.spines > 0,
          "the fat-tree needs at least one leaf, one host per leaf and one spine");
  require(config.host_link_bytes_per_second > 0 && config.uplink_bytes_per_second > 0,
          "the fat-tree's link rates must be positive");
  require(config.link_delay >= Duration{0}, "the fat-tree's link delay must not be negative");
  require(config.mtu_bytes > config.header_bytes, "the fat-tree's MTU must be larger than a packet's header");
  require(config.mtu_bytes <= std::numeric_limits<std::uint32_t>::max(), "the fat-tree's MTU is too large");
  if (config.port_buffer_bytes < config.mtu_bytes) {
    throw std::invalid_argument(
        fmt::format("the fat-tree's port buffer ({} bytes) must hold at least one packet of the MTU ({} bytes)",
                    config.port_buffer_bytes, config.mtu_bytes));
  }
  const std::size_t uplinks = config.leaves * config.spines;
  links_.resize(2 * hosts_ + 2 * uplinks);
  const Ps delay = config.link_delay.count() * 1000;
  for (std::size_t k = 0; k < links_.size(); ++k) {
    Link& l = links_[k];
    const bool host_link = k < 2 * hosts_;
    l.ps_per_byte_x1000 =
        thousandths_of_ps_per_byte(host_link ? config.host_link_bytes_per_second : config.uplink_bytes_per_second);
    l.delay = delay;
    l.to_host = k >= hosts_ && k < 2 * hosts_;
    for (std::size_t lane = 0; lane < lanes; ++lane)
      l.credits[lane] = l.to_host ? unlimited_credits : config.port_buffer_bytes;
  }
  busy_pairs_.resize(hosts_ * lanes);
}

void LosslessFabric::schedule(Ps at, Event::Kind kind, std::uint32_t a, std::uint32_t b) {
  queue_.push(Event{std::max(at, now_ps_), sequence_++, a, b, kind});
}

void LosslessFabric::send(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, std::uint32_t channel,
                          bool control, Action delivered) {
  if (from >= hosts_ || to >= hosts_) {
    throw std::out_of_range(
        fmt::format("fat-tree message from host {} to host {}: there are {} hosts", from, to, hosts_));
  }
  if (from == to) throw std::invalid_argument(fmt::format("fat-tree message from host {} to itself", from));
  if (bytes == 0) throw std::invalid_argument(fmt::format("fat-tree message of 0 bytes from host {} to {}", from, to));
  if (channel > 0xffff)
    throw std::invalid_argument(fmt::format("fat-tree message on channel {} (at most 65535)", channel));
  const std::uint8_t lane = control && config_.control_lane ? 1 : 0;
  const std::uint64_t key = ((std::uint64_t{from} * hosts_ + to) * 65536 + channel) * lanes + lane;
  auto [found, added] = pair_index_.try_emplace(key, static_cast<std::uint32_t>(pairs_.size()));
  if (added) {
    QueuePair q;
    q.from = from;
    q.to = to;
    q.lane = lane;
    pairs_.push_back(std::move(q));
  }
  const std::uint32_t pair = found->second;
  std::uint32_t m;
  if (free_messages_.empty()) {
    m = static_cast<std::uint32_t>(messages_.size());
    messages_.emplace_back();
  } else {
    m = free_messages_.back();
    free_messages_.pop_back();
  }
  QueuePair& q = pairs_[pair];
  messages_[m] = Message{pair, q.sent++, bytes, bytes, none, std::move(delivered)};
  if (q.tail == none)
    q.head = m;
  else
    messages_[q.tail].next = m;
  q.tail = m;
  if (!q.busy) {
    q.busy = true;
    Fifo& round = busy_pairs_[from * lanes + lane];
    q.next_busy = none;
    if (round.tail == none)
      round.head = pair;
    else
      pairs_[round.tail].next_busy = pair;
    round.tail = pair;
    try_send(from);  // its host's uplink
  }
}

void LosslessFabric::at(Time at, Action action) {
  std::uint32_t index;
  if (free_actions_.empty()) {
    index = static_cast<std::uint32_t>(actions_.size());
    actions_.push_back(std::move(action));
  } else {
    index = free_actions_.back();
    free_actions_.pop_back();
    actions_[index] = std::move(action);
  }
  schedule(at.count() * 1000, Event::Kind::action, index);
}

void LosslessFabric::run_until(Time until) {
  stopped_ = false;
  const Ps end = until.count() * 1000 + 999;
  if (end < now_ps_) return;
  while (!stopped_ && !queue_.empty() && queue_.top().at <= end) {
    const Event e = queue_.top();
    queue_.pop();
    dispatch(e);
  }
  if (!stopped_) now_ps_ = std::max(now_ps_, until.count() * 1000);
}

void LosslessFabric::run() {
  stopped_ = false;
  while (!stopped_ && !queue_.empty()) {
    const Event e = queue_.top();
    queue_.pop();
    dispatch(e);
  }
}

void LosslessFabric::dispatch(const Event& e) {
  now_ps_ = e.at;
  ++counters_.events;
  switch (e.kind) {
    case Event::Kind::link_free:
      links_[e.a].busy = false;
      try_send(e.a);
      break;
    case Event::Kind::arrive: arrive(e.a, e.b); break;
    case Event::Kind::credit:
      links_[e.a / lanes].credits[e.a % lanes] += e.b;
      try_send(e.a / lanes);
      break;
    case Event::Kind::action: {
      Action run = std::move(actions_[e.a]);
      actions_[e.a] = nullptr;
      free_actions_.push_back(e.a);
      run();
      break;
    }
  }
}

// The link sends its next packet if it is idle: the control lane first (when it has credits
// for its next packet), then the data lane.
void LosslessFabric::try_send(std::uint32_t link) {
  if (links_[link].busy) return;
  const bool from_host = link < hosts_;
  for (std::uint32_t lane = lanes; lane-- > 0;) {
    if (from_host ? send_from_host(link, lane) : send_from_buffer(link, lane)) return;
  }
}

bool LosslessFabric::send_from_host(std::uint32_t link, std::uint32_t lane) {
  Fifo& round = busy_pairs_[link * lanes + lane];
  if (round.head == none) return false;
  const std::uint32_t pair = round.head;
  QueuePair& q = pairs_[pair];
  Message& m = messages_[q.head];
  const std::uint64_t payload = std::min<std::uint64_t>(m.unsent, config_.mtu_bytes - config_.header_bytes);
  const auto wire = static_cast<std::uint32_t>(payload + config_.header_bytes);
  if (links_[link].credits[lane] < wire) {
    ++counters_.credit_stalls;
    return false;
  }
  const std::uint32_t p = new_packet();
  packets_[p] = Packet{q.head, wire, static_cast<std::uint32_t>(payload), q.to, none, static_cast<std::uint8_t>(lane)};
  m.unsent -= payload;
  if (m.unsent == 0) {
    q.head = m.next;
    if (q.head == none) q.tail = none;
  }
  // The round: this queue pair to its end (one packet each in turn), or out when it is done.
  round.head = q.next_busy;
  if (round.head == none) round.tail = none;
  q.next_busy = none;
  if (q.head == none) {
    q.busy = false;
  } else {
    if (round.tail == none)
      round.head = pair;
    else
      pairs_[round.tail].next_busy = pair;
    round.tail = pair;
  }
  transmit(link, p);
  return true;
}

bool LosslessFabric::send_from_buffer(std::uint32_t link, std::uint32_t lane) {
  Link& out = links_[link];
  const std::uint32_t input = out.waiting[lane].head;
  if (input == none) return false;
  Link& in = links_[input];
  const std::uint32_t p = in.buffer[lane].head;
  const std::uint32_t wire = packets_[p].wire;
  if (out.credits[lane] < wire) {
    ++counters_.credit_stalls;
    return false;
  }
  // Out of the input buffer; its credits go back upstream.
  out.waiting[lane].head = in.next_waiting[lane];
  if (out.waiting[lane].head == none) out.waiting[lane].tail = none;
  in.next_waiting[lane] = none;
  --out.waiting_count[lane];
  in.buffer[lane].head = packets_[p].next;
  if (in.buffer[lane].head == none) in.buffer[lane].tail = none;
  in.buffered -= wire;
  schedule(now_ps_ + in.delay, Event::Kind::credit, input * lanes + lane, wire);
  transmit(link, p);
  if (in.buffer[lane].head != none) wait_for_output(input, lane);
  return true;
}

void LosslessFabric::transmit(std::uint32_t link, std::uint32_t packet) {
  Link& l = links_[link];
  Packet& p = packets_[packet];
  p.next = none;
  if (!l.to_host) l.credits[p.lane] -= p.wire;
  l.busy = true;
  const Ps time = (static_cast<Ps>(p.wire) * l.ps_per_byte_x1000 + 500) / 1000;
  ++counters_.packet_hops;
  ++l.packets;
  l.bytes += p.wire;
  l.busy_ps += time;
  l.last_end_ps = now_ps_ + time;
  schedule(now_ps_ + time, Event::Kind::link_free, link);
  schedule(now_ps_ + time + l.delay, Event::Kind::arrive, link, packet);
}

void LosslessFabric::arrive(std::uint32_t link, std::uint32_t packet) {
  Link& l = links_[link];
  Packet& p = packets_[packet];
  if (l.to_host) {
    Message& m = messages_[p.message];
    m.missing -= p.payload;
    const std::uint32_t message = p.message;
    free_packets_.push_back(packet);
    if (m.missing == 0) complete(message);
    return;
  }
  // Into the receiving switch's input buffer (its credits were taken when it was sent).
  Fifo& buffer = l.buffer[p.lane];
  const bool was_empty = buffer.head == none;
  if (was_empty)
    buffer.head = packet;
  else
    packets_[buffer.tail].next = packet;
  buffer.tail = packet;
  l.buffered += p.wire;
  l.most_buffered = std::max(l.most_buffered, l.buffered);
  if (was_empty) wait_for_output(link, p.lane);
}

void LosslessFabric::wait_for_output(std::uint32_t input, std::uint32_t lane) {
  const std::uint32_t output = route(input, packets_[links_[input].buffer[lane].head]);
  Link& out = links_[output];
  Fifo& waiting = out.waiting[lane];
  if (waiting.tail == none)
    waiting.head = input;
  else
    links_[waiting.tail].next_waiting[lane] = input;
  waiting.tail = input;
  ++out.waiting_count[lane];
  try_send(output);
}

// The link a packet at the head of `input`'s buffer leaves by.
std::uint32_t LosslessFabric::route(std::uint32_t input, const Packet& p) {
  const std::size_t to_leaf = leaf_of(p.to);
  const std::size_t uplinks = config_.leaves * config_.spines;
  if (input < hosts_) {  // at the sender's leaf
    const std::size_t leaf = leaf_of(input);
    if (to_leaf == leaf) return static_cast<std::uint32_t>(host_downlink(p.to));
    const std::size_t spine = config_.adaptive ? least_loaded_uplink(leaf, p.lane) : std::size_t{p.to} % config_.spines;
    return static_cast<std::uint32_t>(leaf_uplink(leaf, spine));
  }
  if (input < 2 * hosts_ + uplinks) {  // a leaf's uplink: at its spine
    const std::size_t spine = (input - 2 * hosts_) % config_.spines;
    return static_cast<std::uint32_t>(spine_downlink(spine, to_leaf));
  }
  return static_cast<std::uint32_t>(host_downlink(p.to));  // a spine's downlink: at the receiver's leaf
}

// Adaptive routing: the uplink with the fewest bytes waiting for it or sent and not yet
// credited back; among equals, the first from a point drawn from the seed.
std::uint32_t LosslessFabric::least_loaded_uplink(std::size_t leaf, std::uint32_t lane) {
  const std::size_t spines = config_.spines;
  const std::size_t start = static_cast<std::size_t>(splitmix64(draws_) % spines);
  std::size_t best = start;
  std::uint64_t best_load = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t k = 0; k < spines; ++k) {
    const std::size_t spine = (start + k) % spines;
    const Link& l = links_[leaf_uplink(leaf, spine)];
    const std::uint64_t load = std::uint64_t{l.waiting_count[lane]} * config_.mtu_bytes +
                               (config_.port_buffer_bytes - l.credits[lane]) + (l.busy ? config_.mtu_bytes : 0);
    if (load < best_load) {
      best_load = load;
      best = spine;
    }
  }
  return static_cast<std::uint32_t>(best);
}

// A message's last byte arrived: it is delivered once every earlier one of its queue pair is.
void LosslessFabric::complete(std::uint32_t message) {
  const std::uint32_t pair = messages_[message].pair;
  if (messages_[message].sequence != pairs_[pair].delivered) {
    pairs_[pair].complete.emplace(messages_[message].sequence, message);
    return;
  }
  for (std::uint32_t m = message; m != none;) {
    Action delivered = std::move(messages_[m].delivered);
    messages_[m].delivered = nullptr;
    free_messages_.push_back(m);
    QueuePair& q = pairs_[pair];
    ++q.delivered;
    m = none;
    if (auto next = q.complete.find(q.delivered); next != q.complete.end()) {
      m = next->second;
      q.complete.erase(next);
    }
    ++counters_.messages_delivered;
    delivered();  // may send: pairs_ and messages_ may grow
  }
}

std::uint32_t LosslessFabric::new_packet() {
  if (free_packets_.empty()) {
    packets_.emplace_back();
    return static_cast<std::uint32_t>(packets_.size() - 1);
  }
  const std::uint32_t p = free_packets_.back();
  free_packets_.pop_back();
  return p;
}

LinkReport LosslessFabric::link(std::size_t index) const {
  const Link& l = links_.at(index);
  return LinkReport{l.packets, l.bytes, Duration{l.busy_ps / 1000}, Time{l.last_end_ps / 1000}, l.most_buffered};
}

}  // namespace netio::scheduler::simulation
