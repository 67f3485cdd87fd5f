// SPDX-License-Identifier: MIT
#include "netio/scheduler/assigner.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

namespace netio::scheduler {
namespace {

constexpr netio::detail::Rejecter reject_from_peer{Errc::protocol_error, "assigner"};

// How many decided assignments the Assigner keeps for inputs that connect late.
constexpr std::size_t kept_assignments = 2 * assignment_distance + 2;

// The decision's law (assigner.hpp, docs/design/assignment.md; the figures in
// docs/guide/scheduled-push.md chose them):
// The smallest share a node not skipped starts from, in fair shares (1 / live nodes), so that
// one whose share fell to nothing (skipped while full) can come back.
constexpr double floor_fraction_per_node = 1.0 / 16;
// Over, for a node at its fair share or more: its use (thousandths of the credits, scaled to a
// fair share) this far above the others' median, while that median is below room_below; cut
// after overload_decisions decisions in a row, by its excess, to between cut_min and cut_max
// of its share.
constexpr double overload_band = 400;
constexpr double room_below = 500;
constexpr std::uint32_t overload_decisions = 2;  // one for a full node past the start-up
constexpr double cut_min = 0.5;
constexpr double cut_max = 0.8;
// A node cut before (limited) is over as soon as its use rises by more than rise_band from one
// measured interval to the next while above rise_floor (its queue grows: its share is above
// what it takes), and keeps up while its use falls by more than rise_band (its queue drains).
constexpr double rise_band = 50;
constexpr double rise_floor = 100;
// Over again at a share it kept up at before: what it takes fell; cut to this much of it.
constexpr double recut = 0.9;
// A limited node's search, in fair shares per decision: up by at most `increase` (half the
// way to the lowest share it was over at, when known); held where that gap is below
// `tolerance` (or one time-slice); the share it was over at creeps up by `creep`, so that a
// node that got faster is tried again now and then.
constexpr double increase = 0.04;
constexpr double tolerance = 0.03;
constexpr double creep = 0.0025;

}  // namespace

IntervalAssignment fixed_assignment(const SchedulerConfig& config, IntervalIndex j) {
  return IntervalAssignment{
      j, std::vector<std::uint32_t>(config.compute_count, static_cast<std::uint32_t>(config.rounds_per_interval()))};
}

std::vector<ComputeIndex> assignment_table(std::span<const std::uint32_t> shares) {
  const std::uint64_t total = std::accumulate(shares.begin(), shares.end(), std::uint64_t{0});
  std::vector<ComputeIndex> table;
  table.reserve(total);
  std::vector<std::int64_t> current(shares.size(), 0);
  for (std::uint64_t p = 0; p < total; ++p) {
    std::size_t best = 0;
    for (std::size_t c = 0; c < shares.size(); ++c) {
      current[c] += shares[c];
      if (current[c] > current[best]) best = c;
    }
    current[best] -= static_cast<std::int64_t>(total);
    table.push_back(static_cast<ComputeIndex>(best));
  }
  return table;
}

void check_assignment(std::uint32_t compute_count, std::uint64_t timeslices_in_interval,
                      const IntervalAssignment& assignment, std::uint32_t input_count) {
  if (assignment.shares.size() != compute_count) {
    reject_from_peer("assignment of interval " + std::to_string(assignment.interval) + " has " +
                     std::to_string(assignment.shares.size()) + " shares for " + std::to_string(compute_count) +
                     " compute nodes");
  }
  const std::uint64_t sum = std::accumulate(assignment.shares.begin(), assignment.shares.end(), std::uint64_t{0});
  if (sum != timeslices_in_interval) {
    reject_from_peer("assignment of interval " + std::to_string(assignment.interval) + " shares " +
                     std::to_string(sum) + " time-slices, not the interval's " +
                     std::to_string(timeslices_in_interval));
  }
  const bool start_fits = assignment.interval <= std::numeric_limits<TimesliceIndex>::max() / timeslices_in_interval;
  std::vector<bool> changed(compute_count, false);
  for (const auto& change : assignment.changes) {
    const auto what = "assignment of interval " + std::to_string(assignment.interval) + ": slot " +
                      std::to_string(change.compute) + (change.joins ? " joins" : " leaves");
    if (change.compute >= compute_count) {
      reject_from_peer(what + ", out of range (" + std::to_string(compute_count) + " compute nodes)");
    }
    if (!start_fits || change.from != assignment.interval * timeslices_in_interval) {
      reject_from_peer(what + " from time-slice " + std::to_string(change.from) + ", not the interval's first");
    }
    if (changed[change.compute]) reject_from_peer(what + " twice");
    changed[change.compute] = true;
  }
  std::vector<InputIndex> joining;
  for (const auto& join : assignment.input_joins) {
    const auto what = "assignment of interval " + std::to_string(assignment.interval) + ": input " +
                      std::to_string(join.input) + " joins";
    if (join.input >= input_count) {
      reject_from_peer(what + ", out of range (" + std::to_string(input_count) + " inputs)");
    }
    if (!start_fits || join.from != assignment.interval * timeslices_in_interval) {
      reject_from_peer(what + " from time-slice " + std::to_string(join.from) + ", not the interval's first");
    }
    if (std::find(joining.begin(), joining.end(), join.input) != joining.end()) reject_from_peer(what + " twice");
    joining.push_back(join.input);
  }
}

Assigner::Assigner(const SchedulerConfig& config, const std::vector<InputIndex>& standby_inputs)
    : config_((validate(config), config)),
      per_interval_(config.timeslices_in_interval()),
      gone_(config.input_count, false),
      inputs_(config.input_count, standby_inputs),
      over_streak_(config.compute_count, 0),
      last_use_(config.compute_count, -1),
      limits_(config.compute_count),
      carry_(config.compute_count, 0.0),
      left_(config.compute_count, false),
      joined_(config.compute_count) {
  for (IntervalIndex j = 0; j < assignment_distance; ++j) decided_.emplace(j, fixed_assignment(config_, j));
}

std::vector<IntervalAssignment> Assigner::on_report(const LoadReport& report) {
  if (report.input >= config_.input_count) {
    reject_from_peer("report of input " + std::to_string(report.input) + ", out of range (" +
                     std::to_string(config_.input_count) + " inputs)");
  }
  if (report.in_use.size() != config_.compute_count) {
    reject_from_peer("report of input " + std::to_string(report.input) + " for interval " +
                     std::to_string(report.interval) + " names " + std::to_string(report.in_use.size()) +
                     " compute nodes, not " + std::to_string(config_.compute_count));
  }
  if (report.interval < next_report_ || gone_[report.input]) return {};
  pending_[report.interval].try_emplace(report.input, report);
  return decide_ready();
}

std::vector<IntervalAssignment> Assigner::on_input_gone(InputIndex i) {
  if (i >= config_.input_count || gone_[i]) return {};
  gone_[i] = true;
  for (auto& [interval, reports] : pending_) reports.erase(i);
  return decide_ready();
}

// Interval j is decided from the reports of the inputs that are members at j and not gone:
// a standby input's from the interval a decision made it join at (decided before j's reports
// are: k = j + assignment_distance), so every replica waits for the same inputs.
std::vector<IntervalAssignment> Assigner::decide_ready() {
  std::vector<IntervalAssignment> decided;
  for (;;) {
    const IntervalIndex j = next_report_;
    std::uint32_t expected = 0;
    for (InputIndex i = 0; i < config_.input_count; ++i) expected += !gone_[i] && inputs_.member(i, j) ? 1 : 0;
    const auto it = pending_.find(j);
    if (expected == 0 || it == pending_.end()) break;
    std::vector<const LoadReport*> reports;
    for (const auto& [input, report] : it->second) {
      if (inputs_.member(input, j)) reports.push_back(&report);  // a standby input's, early: not counted
    }
    if (reports.size() < expected) break;
    const IntervalIndex k = next_report_ + assignment_distance;
    auto assignment = decide(k, reports);
    decided_.insert_or_assign(k, assignment);
    decided.push_back(std::move(assignment));
    pending_.erase(it);
    ++next_report_;
    while (decided_.size() > kept_assignments) decided_.erase(decided_.begin());
  }
  return decided;
}

IntervalAssignment Assigner::decide(IntervalIndex k, const std::vector<const LoadReport*>& reports) {
  const std::uint32_t m = config_.compute_count;
  // The shares of the interval the reports describe: each decision corrects what was measured,
  // so two decisions never both correct the same measurement.
  const std::vector<std::uint32_t>& measured = decided_.at(k - assignment_distance).shares;
  auto changes = decide_membership(k, reports);
  auto input_joins = decide_input_joins(k, reports);
  // Each node's use: the median over the inputs (the lower middle one of an even count),
  // lost when any input lost it.
  std::vector<std::uint32_t> use(m, 0);
  std::vector<bool> skip(m, false);
  std::vector<std::uint16_t> column(reports.size());
  for (ComputeIndex c = 0; c < m; ++c) {
    if (left_[c]) {  // drained: no share, for good
      skip[c] = true;
      continue;
    }
    if (joined_[c] && *joined_[c] > k - assignment_distance) {
      // Joined after the measured interval: the reports say "not a member"; it is new, with an
      // empty buffer: use 0, no limit and no streak, so that it takes a fair share at once.
      limits_[c] = Limit{};
      over_streak_[c] = 0;
      continue;
    }
    for (std::size_t r = 0; r < reports.size(); ++r) column[r] = reports[r]->in_use[c];
    std::sort(column.begin(), column.end());
    skip[c] = column.back() == lost_compute;
    use[c] = std::min<std::uint32_t>(column[(column.size() - 1) / 2], full_use);
  }
  std::vector<ComputeIndex> live;
  for (ComputeIndex c = 0; c < m; ++c) {
    if (!skip[c]) live.push_back(c);
  }
  // Every node lost: nothing to choose between.
  if (live.empty()) return IntervalAssignment{k, measured, std::move(changes), std::move(input_joins)};
  const double n = static_cast<double>(per_interval_);
  const double fair = 1.0 / static_cast<double>(live.size());
  const double floor = floor_fraction_per_node * fair;
  // The reference: the median use of the nodes that had their fair share (all of them when none did).
  std::vector<std::uint32_t> sorted;
  bool any_room = false;
  for (const ComputeIndex c : live) {
    if (static_cast<double>(measured[c]) / n >= fair - 0.5 / n) sorted.push_back(use[c]);
    any_room = any_room || use[c] < full_use;
  }
  if (sorted.empty()) {
    for (const ComputeIndex c : live) sorted.push_back(use[c]);
  }
  std::sort(sorted.begin(), sorted.end());
  const double typical = sorted[(sorted.size() - 1) / 2];
  std::vector<double> weight(m, 0);
  std::vector<bool> normal(m, false);
  double reduced_sum = 0;
  std::uint32_t normal_count = 0;
  // The shares before the measured interval: a share raised only in the measured interval may
  // not show its queue yet, so keeping up there proves nothing.
  const std::vector<std::uint32_t>* before =
      k > assignment_distance ? &decided_.at(k - assignment_distance - 1).shares : nullptr;
  const double fair_timeslices = fair * n;
  // The first decisions measure the connections' set-up, where a node may look full once.
  constexpr IntervalIndex settled_from = 2 * assignment_distance + 1;
  for (const ComputeIndex c : live) {
    const double share = static_cast<double>(measured[c]) / n;
    const bool full = use[c] >= full_use && any_room;
    const double last = last_use_[c];
    last_use_[c] = use[c];
    if (full && share <= floor) {  // full at the floor: stuck
      skip[c] = true;
      limits_[c] = Limit{};
      continue;
    }
    // Its use as if it had a fair share: at a node that keeps up, use grows with the share.
    const double scaled = static_cast<double>(use[c]) * (share < fair && share > 0 ? fair / share : 1.0);
    const double excess = std::min<double>(scaled, full_use) - typical;
    // Its queue drains: whatever the use, the share it has now is below what it takes.
    const bool falling = last >= 0 && use[c] + rise_band < last;
    // Over: it holds the inputs' credits far longer than the others, which have room (in a
    // system whose every node is busy, use is high everywhere and its differences are noise).
    const bool over = (full || excess > overload_band) && typical < room_below && !falling;
    // Its queue grows.
    const bool rising = last >= 0 && use[c] > last + rise_band && use[c] > rise_floor;
    Limit& limit = limits_[c];
    if (limit.on) {
      // Cut before: search for the share it takes, from the measured interval on.
      const double had = static_cast<double>(measured[c]);
      const bool held = before == nullptr || (*before)[c] >= measured[c];
      if ((full && !falling) || over || rising) {
        if (had <= limit.good) {
          limit.good = had * recut;  // over where it kept up before: it got slower
        }
        limit.bad = std::min(limit.bad, had);
      } else if (held) {
        limit.good = std::max(limit.good, had);
        if (had >= limit.bad) limit.bad = std::numeric_limits<double>::infinity();  // it got faster
      }
      limit.bad += creep * fair_timeslices;
      const double gap = limit.bad - limit.good;
      double next = limit.good;
      if (gap > std::max(1.0, tolerance * fair_timeslices) && !(full || over || rising)) {
        next += std::min(increase * fair_timeslices, gap / 2);
      }
      next = std::max(next, floor * n);
      if (next >= fair_timeslices - 0.5) {
        limit = Limit{};  // back to its fair share: a node as the others
      } else {
        weight[c] = next / n;
      }
      over_streak_[c] = 0;
    } else {
      over_streak_[c] = over ? over_streak_[c] + 1 : 0;
      // A cut decided after the measured interval (for k − 1) has not shown in the reports yet:
      // what they show still queues from before it. Cut once, not again on the same queue.
      const double pending = static_cast<double>(decided_.at(k - 1).shares[c]) / n;
      if (over && pending < share - 0.5 / n) {
        weight[c] = pending;
      } else if (over && (over_streak_[c] >= overload_decisions || (k >= settled_from && (full || rising)))) {
        // Slower than the others, and again (full or its queue growing, past the start-up: once
        // is enough): less.
        // One above its fair share is over-assigned before it is slow: back to fair first.
        weight[c] = share * std::clamp(1 - excess / full_use, cut_min, cut_max);
        if (share > fair + 0.5 / n) {
          weight[c] = std::max(weight[c], fair);
        } else {
          limit = Limit{true, weight[c] * n, std::numeric_limits<double>::infinity()};
        }
      } else if (over) {  // once: it may be a passing queue
        weight[c] = share;
      }
    }
    if (weight[c] > 0 && weight[c] < fair) {
      reduced_sum += weight[c];
    } else {
      normal[c] = true;
      ++normal_count;
    }
  }
  // The nodes that keep up at their fair share or more split the rest evenly.
  for (const ComputeIndex c : live) {
    if (normal[c]) weight[c] = std::max(1.0 - reduced_sum, 0.0) / normal_count;
  }
  // Whole shares summing to n. What rounding gave or took is carried to the next decision
  // (carry_, summing to 0), so that a node's shares average its weight over the intervals:
  // at 48 × 48 a fair share is 20 time-slices, and the 47 nodes that split 952 need 20.26
  // each; without the carry the same 12 nodes got 21 for 12 intervals in a row and every
  // interval took as long as 21 (0.95 of what 20.26 takes). The largest remainders get the
  // time-slices left; on a tie the first from node k mod M on.
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  double carried = 0;
  for (const ComputeIndex c : live) carried += skip[c] ? 0.0 : carry_[c];
  const double mean_carry = carried / static_cast<double>(live.size());
  IntervalAssignment assignment{k, std::vector<std::uint32_t>(m, 0)};
  std::vector<double> exact(m, 0);
  std::vector<double> remainder(m, 0);
  std::uint64_t given = 0;
  for (ComputeIndex c = 0; c < m; ++c) {
    if (skip[c]) {
      carry_[c] = 0;
      continue;
    }
    exact[c] = std::max(weight[c] / total * static_cast<double>(per_interval_) + carry_[c] - mean_carry, 0.0);
    assignment.shares[c] = static_cast<std::uint32_t>(exact[c]);
    remainder[c] = exact[c] - assignment.shares[c];
    given += assignment.shares[c];
  }
  std::vector<ComputeIndex> order(m);
  std::iota(order.begin(), order.end(), ComputeIndex{0});
  const auto rotated = [&](ComputeIndex c) { return (c + m - k % m) % m; };
  std::sort(order.begin(), order.end(), [&](ComputeIndex a, ComputeIndex b) {
    return remainder[a] != remainder[b] ? remainder[a] > remainder[b] : rotated(a) < rotated(b);
  });
  for (std::size_t r = 0; given < per_interval_; r = (r + 1) % m) {
    if (skip[order[r]]) continue;
    ++assignment.shares[order[r]];
    ++given;
  }
  for (ComputeIndex c = 0; c < m; ++c) {
    if (!skip[c]) carry_[c] = std::clamp(exact[c] - assignment.shares[c], -1.0, 1.0);
  }
  assignment.changes = std::move(changes);
  assignment.input_joins = std::move(input_joins);
  return assignment;
}

// A standby input flagged by any report joins from k on, once; a flag for an input that is a
// member already (joined, or never on standby) is ignored: the inputs keep flagging until they
// hold the decision. Depends on the reports' contents only, as decide_membership().
std::vector<InputJoinChange> Assigner::decide_input_joins(IntervalIndex k,
                                                          const std::vector<const LoadReport*>& reports) {
  std::vector<InputJoinChange> joins;
  for (InputIndex x = 0; x < config_.input_count; ++x) {
    if (!inputs_.standby(x) || inputs_.joins_from(x)) continue;
    const bool flagged = std::any_of(reports.begin(), reports.end(), [&](const LoadReport* r) {
      return std::find(r->joining_inputs.begin(), r->joining_inputs.end(), x) != r->joining_inputs.end();
    });
    if (!flagged) continue;
    (void)inputs_.join(x, k);
    joins.push_back(InputJoinChange{x, k * per_interval_});
  }
  return joins;
}

// A member flagged draining by any report leaves from k on; a slot flagged joining by any
// report joins from k on, once. A flag for a node that left already (or a second one of a
// slot that joined) is ignored: inputs keep flagging until they hold the decision, and the
// reports of the intervals before it still carry the flag. Depends on the reports' contents
// only, so every replica names the same changes.
std::vector<MembershipChange> Assigner::decide_membership(IntervalIndex k,
                                                          const std::vector<const LoadReport*>& reports) {
  std::vector<MembershipChange> changes;
  const TimesliceIndex from = k * per_interval_;
  for (ComputeIndex c = 0; c < config_.compute_count; ++c) {
    const auto flagged = [&](std::uint16_t flag) {
      return std::any_of(reports.begin(), reports.end(), [&](const LoadReport* r) { return r->in_use[c] == flag; });
    };
    if (left_[c]) continue;
    if (flagged(draining_compute)) {
      left_[c] = true;
      limits_[c] = Limit{};
      carry_[c] = 0;
      changes.push_back(MembershipChange{c, false, from});
    } else if (!joined_[c] && flagged(joining_compute)) {
      joined_[c] = k;
      carry_[c] = 0;
      changes.push_back(MembershipChange{c, true, from});
    }
  }
  return changes;
}

std::optional<IntervalAssignment> Assigner::assignment(IntervalIndex j) const {
  if (const auto it = decided_.find(j); it != decided_.end()) return it->second;
  return std::nullopt;
}

std::vector<IntervalAssignment> Assigner::decided_from(IntervalIndex from) const {
  std::vector<IntervalAssignment> out;
  for (auto it = decided_.lower_bound(from); it != decided_.end(); ++it) out.push_back(it->second);
  return out;
}

}  // namespace netio::scheduler
