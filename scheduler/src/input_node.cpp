// SPDX-License-Identifier: MIT
#include "netio/scheduler/input_node.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <algorithm>
#include <string>

namespace netio::scheduler {
namespace {

// How many outstanding time-slices per compute node grant() makes room for at most.
constexpr std::uint32_t presized_slots = 64;

// Where the k-th oldest time-slice of compute node c lies, its ring starting at `head`, in
// rings of `size` slots each (a power of 2).
std::size_t ring_slot(ComputeIndex c, std::uint32_t size, std::uint32_t head, std::uint32_t k) {
  return c * std::size_t{size} + ((head + k) & (size - 1));
}

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "input node"};

}  // namespace

std::string_view to_string(Mode mode) noexcept { return mode == Mode::dfs ? "dfs" : "best-effort"; }

InputNode::InputNode(const SchedulerConfig& config, InputIndex self, Mode mode,
                     const std::vector<ComputeIndex>& standby, bool standby_input)
    : layout_(config),
      assignment_(config.assignment),
      self_(self),
      mode_(mode),
      granted_(config.compute_count, 0),
      available_(config.compute_count, 0),
      lost_(config.compute_count, false),
      rings_(config.compute_count),
      use_sums_(config.assignment == Assignment::load ? config.compute_count : 0, 0),
      membership_(config.compute_count, standby),
      requested_(config.compute_count, Request::none),
      input_count_(config.input_count),
      started_(!standby_input) {
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
    next.due = decision.due;
    next.paced = !decision.best_effort;
    const auto compute = compute_of(next.timeslice);
    if (!compute) {
      next.what = Next::What::wait_for_assignment;
      return next;
    }
    next.timeslice = in_node_order(decision.timeslice);
    next.compute = *compute;
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
  next.due = now;
  const auto compute = compute_of(next.timeslice);
  if (!compute) {
    next.what = Next::What::wait_for_assignment;
    return next;
  }
  next.compute = *compute;
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
  const ComputeIndex c = assigned(timeslice);
  if (available_[c] == 0) reject("sent time-slice " + std::to_string(timeslice) + " without a credit");
  note_load();
  if (engine_) {
    engine_->on_sent(in_engine_order(timeslice), now);
    push_unacknowledged(c, timeslice);
  }
  --available_[c];
  count_sent();
}

std::optional<IntervalCompletion> InputNode::on_skipped(TimesliceIndex timeslice, Time now) {
  if (timeslice != next_timeslice()) {
    reject("skipped time-slice " + std::to_string(timeslice) + " out of order (next is " +
           std::to_string(next_timeslice()) + ")");
  }
  (void)assigned(timeslice);
  note_load();
  count_sent();
  if (!engine_) return std::nullopt;
  const TimesliceIndex engine_timeslice = in_engine_order(timeslice);
  engine_->on_sent(engine_timeslice, now);
  return engine_->on_acknowledged(engine_timeslice, now);
}

void InputNode::grant(ComputeIndex c, std::uint32_t credits) {
  check(c);
  if (credits == 0) reject("compute node " + std::to_string(c) + " granted no credits");
  if (granted_[c] != 0) reject("compute node " + std::to_string(c) + " granted credits twice");
  granted_[c] = credits;
  available_[c] = credits;
  // Sized for the credits, up to a bound: the count comes from the peer (its welcome), and
  // beyond it the rings grow with what is really outstanding.
  if (engine_) grow_rings(std::min(credits, presized_slots));
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
  const auto compute = compute_of(timeslice);
  if (!compute || !pop_unacknowledged(*compute, timeslice)) {
    reject("acknowledgement of time-slice " + std::to_string(timeslice) + ", which is not outstanding");
  }
  return engine_->on_acknowledged(in_engine_order(timeslice), now);
}

std::optional<ClockProbe> InputNode::take_clock_sample() {
  return engine_ ? engine_->take_clock_sample() : std::nullopt;
}

std::optional<ComputeIndex> InputNode::compute_of(TimesliceIndex t) const {
  const auto own = own_of(t);
  if (!own || membership_.member(*own, t)) return own;
  return membership_.route(t, *own).value_or(*own);  // no member at all: its own (lost, or never there)
}

const ComputeIndex* InputNode::round_nodes(TimesliceIndex round_start) const {
  const std::uint32_t m = layout_.compute_count();
  const IntervalIndex j = layout_.interval_of(round_start);
  const auto table = tables_.find(j);
  if (assignment_ == Assignment::load && table == tables_.end() && j >= assignment_distance) return nullptr;
  if (membership_.all_members(round_start, round_start + m)) {
    if (table == tables_.end()) return nullptr;
    return table->second.data() + (round_start - layout_.first_timeslice(j));
  }
  if (cached_round_ != round_start) {
    cached_nodes_.resize(m);
    for (std::uint32_t p = 0; p < m; ++p) cached_nodes_[p] = *compute_of(round_start + p);
    cached_round_ = round_start;
  }
  return cached_nodes_.data();
}

bool InputNode::on_membership(const MembershipChange& change) {
  if (sent_ > change.from) {
    throw Error(Errc::protocol_error, "input " + std::to_string(self_) + ": slot " + std::to_string(change.compute) +
                                          (change.joins ? " joins" : " leaves") + " from time-slice " +
                                          std::to_string(change.from) + ", but this input sent into its round already");
  }
  const bool added = membership_.apply(change);
  cached_round_ = ~TimesliceIndex{0};
  return added;
}

void InputNode::start_at(TimesliceIndex from) {
  if (sent_ != 0) reject("start_at(" + std::to_string(from) + ") after " + std::to_string(sent_) + " sends");
  if (from % layout_.timeslices_per_interval() != 0) {
    reject("start_at(" + std::to_string(from) + "): not an interval start (intervals of " +
           std::to_string(layout_.timeslices_per_interval()) + ")");
  }
  if (assignment_ == Assignment::load) {
    reject("start_at() under assignment by load (the assignment naming the join starts the input)");
  }
  begin_at(from);
}

void InputNode::begin_at(TimesliceIndex from) {
  if (engine_) engine_->start_at(layout_.interval_of(from));
  sent_ = from;
  started_ = true;
}

std::optional<ComputeIndex> InputNode::own_of(TimesliceIndex t) const {
  if (assignment_ == Assignment::fixed) return layout_.compute_of(t);
  const IntervalIndex j = layout_.interval_of(t);
  const auto it = tables_.find(j);
  if (it != tables_.end()) return it->second[t - layout_.first_timeslice(j)];
  if (j < assignment_distance) return layout_.compute_of(t);  // decided by nobody: fixed
  return std::nullopt;
}

TimesliceIndex InputNode::next_timeslice() const noexcept { return in_node_order(layout_.timeslice_at(self_, sent_)); }

// Within a round the input visits places (f + k) mod M, k = 0 .. M − 1, f its first compute
// node. A compute node with several places in the round takes them in index order: its
// r-th visit goes to its r-th smallest place.
TimesliceIndex InputNode::in_node_order(TimesliceIndex t) const noexcept {
  const std::uint32_t m = layout_.compute_count();
  const TimesliceIndex round_start = t - t % m;
  const ComputeIndex* nodes = round_nodes(round_start);
  if (nodes == nullptr) return t;  // fixed: one place per node and round
  const std::uint32_t first = layout_.first_compute(self_);
  const std::uint32_t place = static_cast<std::uint32_t>(t % m);
  const ComputeIndex c = nodes[place];
  std::uint32_t visits_before = 0;  // this input's visits to c before this one
  for (std::uint32_t k = first; k % m != place; ++k) visits_before += nodes[k % m] == c ? 1 : 0;
  for (std::uint32_t p = 0; p < m; ++p) {
    if (nodes[p] != c) continue;
    if (visits_before == 0) return round_start + p;
    --visits_before;
  }
  return t;  // not reached: c has as many places as visits
}

TimesliceIndex InputNode::in_engine_order(TimesliceIndex t) const noexcept {
  const std::uint32_t m = layout_.compute_count();
  const TimesliceIndex round_start = t - t % m;
  const ComputeIndex* nodes = round_nodes(round_start);
  if (nodes == nullptr) return t;
  const std::uint32_t place = static_cast<std::uint32_t>(t % m);
  const ComputeIndex c = nodes[place];
  std::uint32_t smaller = 0;  // c's places below this one
  for (std::uint32_t p = 0; p < place; ++p) smaller += nodes[p] == c ? 1 : 0;
  const std::uint32_t first = layout_.first_compute(self_);
  for (std::uint32_t k = first; k < first + m; ++k) {
    if (nodes[k % m] != c) continue;
    if (smaller == 0) return round_start + k % m;
    --smaller;
  }
  return t;
}

ComputeIndex InputNode::assigned(TimesliceIndex t) const {
  const auto c = compute_of(t);
  if (!c) reject("time-slice " + std::to_string(t) + " sent before its interval was assigned");
  return *c;
}

bool InputNode::on_assignment(const IntervalAssignment& assignment) {
  if (assignment_ != Assignment::load) return false;
  check_assignment(layout_.compute_count(), layout_.timeslices_per_interval(), assignment, input_count_);
  if (!started_) return on_assignment_on_standby(assignment);
  if (assignment.interval < layout_.interval_of(next_timeslice()) || tables_.contains(assignment.interval)) {
    return false;
  }
  for (const auto& join : assignment.input_joins) {
    input_joins_.emplace(join.input, join.from);
    std::erase(inputs_requested_, join.input);
  }
  for (const auto& change : assignment.changes) {
    try {
      (void)on_membership(change);  // before any time-slice of the interval: it waited for this
    } catch (const Error& e) {
      throw Error(Errc::protocol_error,
                  "assignment of interval " + std::to_string(assignment.interval) + ": " + e.what());
    }
    requested_[change.compute] = Request::none;
  }
  tables_.emplace(assignment.interval, assignment_table(assignment.shares));
  cached_round_ = ~TimesliceIndex{0};
  return true;
}

// A standby input sends nothing before its boundary, so every compute change is in time for it
// (its sends start at the boundary, sent_ 0 until then); it keeps no table but its first one.
bool InputNode::on_assignment_on_standby(const IntervalAssignment& assignment) {
  bool new_change = false;
  for (const auto& change : assignment.changes) {
    try {
      new_change = membership_.apply(change) || new_change;
    } catch (const Error& e) {
      throw Error(Errc::protocol_error,
                  "assignment of interval " + std::to_string(assignment.interval) + ": " + e.what());
    }
    requested_[change.compute] = Request::none;
  }
  cached_round_ = ~TimesliceIndex{0};
  for (const auto& join : assignment.input_joins) input_joins_.emplace(join.input, join.from);
  const auto own = std::find_if(assignment.input_joins.begin(), assignment.input_joins.end(),
                                [&](const InputJoinChange& join) { return join.input == self_; });
  if (own == assignment.input_joins.end()) return new_change;
  begin_at(own->from);
  tables_.emplace(assignment.interval, assignment_table(assignment.shares));
  return true;
}

bool InputNode::request_input_join(InputIndex x) {
  if (assignment_ != Assignment::load) {
    throw Error(Errc::protocol_error, "input " + std::to_string(self_) + ": input " + std::to_string(x) +
                                          " asked to join, not under assignment by load (a compute node names when)");
  }
  if (x >= input_count_) {
    throw Error(Errc::protocol_error, "input " + std::to_string(self_) + ": input " + std::to_string(x) +
                                          " asked to join, out of range (" + std::to_string(input_count_) + " inputs)");
  }
  if (x == self_ || input_joins_.contains(x)) return false;
  if (std::find(inputs_requested_.begin(), inputs_requested_.end(), x) != inputs_requested_.end()) return false;
  inputs_requested_.insert(std::upper_bound(inputs_requested_.begin(), inputs_requested_.end(), x), x);
  return true;
}

std::optional<TimesliceIndex> InputNode::input_joins_from(InputIndex x) const {
  const auto it = input_joins_.find(x);
  if (it == input_joins_.end()) return std::nullopt;
  return it->second;
}

bool InputNode::request_change(ComputeIndex c, bool joins) {
  const auto refuse = [&](const std::string& why) {
    throw Error(Errc::protocol_error, "input " + std::to_string(self_) + ": compute node " + std::to_string(c) +
                                          " asked to " + (joins ? "join" : "drain") + ": " + why);
  };
  if (assignment_ != Assignment::load) refuse("not under assignment by load (the node names its boundary)");
  if (c >= requested_.size()) refuse("out of range");
  const Request request = joins ? Request::join : Request::drain;
  if (requested_[c] == request) return false;
  if (joins ? membership_.joins_from(c).has_value() : membership_.leaves_from(c).has_value()) return false;  // named
  // A drain is not checked against this input's membership: a standby slot drains only once
  // it knows its join boundary, which another input may have taken before this one.
  if (joins && membership_.member(c, 0)) refuse("it is not a standby slot");
  requested_[c] = request;
  return true;
}

std::optional<LoadReport> InputNode::take_load_report() {
  auto report = std::move(load_report_);
  load_report_.reset();
  return report;
}

void InputNode::note_load() {
  if (assignment_ != Assignment::load) return;
  if (sent_ % layout_.compute_count() != 0) return;  // this input's rounds start at multiples of M
  for (ComputeIndex c = 0; c < use_sums_.size(); ++c) {
    if (granted_[c] == 0) continue;
    use_sums_[c] += std::uint64_t{granted_[c] - available_[c]} * full_use / granted_[c];
  }
  ++use_samples_;
}

void InputNode::count_sent() {
  ++sent_;
  if (assignment_ != Assignment::load || sent_ % layout_.timeslices_per_interval() != 0) return;
  LoadReport report{self_, sent_ / layout_.timeslices_per_interval() - 1, {}, inputs_requested_};
  report.in_use.resize(use_sums_.size());
  for (ComputeIndex c = 0; c < use_sums_.size(); ++c) {
    if (lost_[c]) {
      report.in_use[c] = lost_compute;
    } else if (requested_[c] != Request::none) {  // until an assignment names the change
      report.in_use[c] = requested_[c] == Request::drain ? draining_compute : joining_compute;
    } else if (!membership_.member(c, sent_)) {
      report.in_use[c] = lost_compute;
    } else {
      report.in_use[c] = static_cast<std::uint16_t>(use_samples_ == 0 ? 0 : use_sums_[c] / use_samples_);
    }
    use_sums_[c] = 0;
  }
  use_samples_ = 0;
  load_report_ = std::move(report);
  forget_assignments();
}

void InputNode::forget_assignments() {
  // Tables stay while a time-slice of theirs awaits its acknowledgement (DFS).
  IntervalIndex oldest = layout_.interval_of(next_timeslice());
  for (ComputeIndex c = 0; c < rings_.size(); ++c) {
    if (rings_[c].count == 0) continue;
    oldest = std::min(oldest, layout_.interval_of(unacknowledged_[ring_slot(c, ring_size_, rings_[c].head, 0)]));
  }
  tables_.erase(tables_.begin(), tables_.lower_bound(oldest));
  cached_round_ = ~TimesliceIndex{0};
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
      if (auto done = engine_->on_acknowledged(in_engine_order(t), now)) completions.push_back(std::move(*done));
    }
  }
  return completions;
}

}  // namespace netio::scheduler
