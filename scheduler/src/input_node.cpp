// SPDX-License-Identifier: MIT
#include "netio/scheduler/input_node.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <algorithm>
#include <string>

namespace netio::scheduler {
namespace {

// How many outstanding time-slices per compute node grant() makes room for at most.
constexpr std::uint32_t kPresizedSlots = 64;

// Where the k-th oldest time-slice of compute node c lies, its ring starting at `head`, in
// rings of `size` slots each (a power of 2).
std::size_t ring_slot(ComputeIndex c, std::uint32_t size, std::uint32_t head, std::uint32_t k) {
  return c * std::size_t{size} + ((head + k) & (size - 1));
}

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "input node"};

}  // namespace

std::string_view to_string(Mode mode) noexcept { return mode == Mode::dfs ? "dfs" : "best-effort"; }

InputNode::InputNode(const SchedulerConfig& config, InputIndex self, Mode mode)
    : layout_(config),
      self_(self),
      mode_(mode),
      granted_(config.compute_count, 0),
      available_(config.compute_count, 0),
      lost_(config.compute_count, false),
      rings_(config.compute_count) {
  if (self >= config.input_count) {
    reject("input " + std::to_string(self) + " out of range (" + std::to_string(config.input_count) + " inputs)");
  }
  if (mode == Mode::dfs) engine_.emplace(config, self);
}

void InputNode::check(ComputeIndex c) const {
  if (c >= granted_.size()) {
    reject("compute node " + std::to_string(c) + " out of range (" + std::to_string(granted_.size()) + ")");
  }
}

InputNode::Next InputNode::next(Time now) const {
  Next next;
  if (engine_) {
    const SendDecision decision = engine_->next_send(now);
    if (decision.action == SendDecision::Action::wait_for_acknowledgements) {
      next.what = Next::What::wait_for_acknowledgements;
      return next;
    }
    next.timeslice = decision.timeslice;
    next.compute = decision.compute;
    next.due = decision.due;
    // A lost compute node's contribution is dropped at once, paced or not.
    if (lost_[next.compute]) {
      next.what = Next::What::skip;
    } else if (decision.action == SendDecision::Action::wait_until) {
      next.what = Next::What::wait_until;
    } else {
      next.what = available_[next.compute] > 0 ? Next::What::send : Next::What::wait_for_credit;
    }
    return next;
  }
  next.timeslice = next_timeslice();
  next.compute = layout_.compute_of(next.timeslice);
  next.due = now;
  if (lost_[next.compute]) {
    next.what = Next::What::skip;
  } else {
    next.what = available_[next.compute] > 0 ? Next::What::send : Next::What::wait_for_credit;
  }
  return next;
}

void InputNode::on_sent(TimesliceIndex timeslice, Time now) {
  if (timeslice != next_timeslice()) {
    reject("sent time-slice " + std::to_string(timeslice) + " out of order (next is " +
           std::to_string(next_timeslice()) + ")");
  }
  const ComputeIndex c = layout_.compute_of(timeslice);
  if (available_[c] == 0) reject("sent time-slice " + std::to_string(timeslice) + " without a credit");
  if (engine_) {
    engine_->on_sent(timeslice, now);
    push_unacknowledged(c, timeslice);
  }
  --available_[c];
  ++sent_;
}

std::optional<IntervalCompletion> InputNode::on_skipped(TimesliceIndex timeslice, Time now) {
  if (timeslice != next_timeslice()) {
    reject("skipped time-slice " + std::to_string(timeslice) + " out of order (next is " +
           std::to_string(next_timeslice()) + ")");
  }
  ++sent_;
  if (!engine_) return std::nullopt;
  engine_->on_sent(timeslice, now);
  return engine_->on_acknowledged(timeslice, now);
}

void InputNode::grant(ComputeIndex c, std::uint32_t credits) {
  check(c);
  if (credits == 0) reject("compute node " + std::to_string(c) + " granted no credits");
  if (granted_[c] != 0) reject("compute node " + std::to_string(c) + " granted credits twice");
  granted_[c] = credits;
  available_[c] = credits;
  // Sized for the credits, up to a bound: the count comes from the peer (its welcome), and
  // beyond it the rings grow with what is really outstanding.
  if (engine_) grow_rings(std::min(credits, kPresizedSlots));
}

void InputNode::grow_rings(std::uint32_t at_least) {
  if (at_least <= ring_size_) return;
  std::uint32_t size = ring_size_ == 0 ? 1 : ring_size_;
  while (size < at_least) size *= 2;
  std::vector<TimesliceIndex> grown(rings_.size() * size);
  for (std::size_t c = 0; c < rings_.size(); ++c) {
    Ring& ring = rings_[c];
    for (std::uint32_t k = 0; k < ring.count; ++k) {
      grown[ring_slot(c, size, 0, k)] = unacknowledged_[ring_slot(c, ring_size_, ring.head, k)];
    }
    ring.head = 0;
  }
  unacknowledged_ = std::move(grown);
  ring_size_ = size;
}

void InputNode::push_unacknowledged(ComputeIndex c, TimesliceIndex t) {
  if (rings_[c].count == ring_size_) grow_rings(ring_size_ + 1);
  Ring& ring = rings_[c];
  unacknowledged_[ring_slot(c, ring_size_, ring.head, ring.count)] = t;
  ++ring.count;
}

bool InputNode::pop_unacknowledged(ComputeIndex c, TimesliceIndex t) {
  Ring& ring = rings_[c];
  if (ring.count == 0) return false;
  TimesliceIndex* slots = unacknowledged_.data() + c * std::size_t{ring_size_};
  const std::uint32_t mask = ring_size_ - 1;
  if (slots[ring.head] == t) {  // the oldest: nearly always
    ring.head = (ring.head + 1) & mask;
    --ring.count;
    return true;
  }
  for (std::uint32_t k = 1; k < ring.count; ++k) {
    if (slots[(ring.head + k) & mask] != t) continue;
    // Out of order: the younger ones move up one slot, keeping the order sent.
    for (; k + 1 < ring.count; ++k) slots[(ring.head + k) & mask] = slots[(ring.head + k + 1) & mask];
    --ring.count;
    return true;
  }
  return false;
}

void InputNode::on_credit(ComputeIndex c, std::uint32_t count) {
  check(c);
  if (static_cast<std::uint64_t>(available_[c]) + count > granted_[c]) {
    reject("compute node " + std::to_string(c) + " returned more credits than it granted (" +
           std::to_string(granted_[c]) + ")");
  }
  available_[c] += count;
}

std::optional<IntervalCompletion> InputNode::on_acknowledged(TimesliceIndex timeslice, Time now) {
  if (!engine_) return std::nullopt;
  if (!pop_unacknowledged(layout_.compute_of(timeslice), timeslice)) {
    reject("acknowledgement of time-slice " + std::to_string(timeslice) + ", which is not outstanding");
  }
  return engine_->on_acknowledged(timeslice, now);
}

std::optional<ClockProbe> InputNode::take_clock_sample() {
  return engine_ ? engine_->take_clock_sample() : std::nullopt;
}

bool InputNode::on_proposal(const Proposal& proposal) { return engine_ ? engine_->on_proposal(proposal) : false; }

std::vector<IntervalCompletion> InputNode::on_compute_lost(ComputeIndex c, Time now) {
  check(c);
  std::vector<IntervalCompletion> completions;
  lost_[c] = true;
  if (engine_) {
    Ring& ring = rings_[c];
    const std::uint32_t head = ring.head, count = ring.count;
    ring = Ring{};
    for (std::uint32_t k = 0; k < count; ++k) {
      const TimesliceIndex t = unacknowledged_[ring_slot(c, ring_size_, head, k)];
      if (auto done = engine_->on_acknowledged(t, now)) completions.push_back(std::move(*done));
    }
  }
  return completions;
}

}  // namespace netio::scheduler
