// SPDX-License-Identifier: MIT
/// @file
/// Assignment of time-slices to compute nodes by load (SchedulerConfig::assignment = load), as
/// pure logic: the coordinator's engine (Assigner, run by every DDE replica), the inputs'
/// reports it decides from (LoadReport) and the decision (IntervalAssignment), which every
/// node turns into the same table of which compute node builds which time-slice.
///
/// The unit is an interval: interval k's n time-slices are shared among the compute nodes
/// (IntervalAssignment::shares, summing to n), and assignment_table() spreads each node's
/// share evenly over the interval, so that a round (M consecutive time-slices) still goes to
/// M different compute nodes wherever the shares allow. The inputs keep their order (input i
/// sends the time-slices of every round starting at place (i + round_offset) mod M) and DFS
/// keeps its pacing (round y of interval j due at tm_j + durr_j·y): only which compute node
/// a place's time-slice goes to changes, so that DFS's offsets still put the inputs on
/// different compute nodes at any moment.
///
/// The load: every input reports, once it has sent interval j, how much of each compute
/// node's credits (its share of that node's receive buffer) it had out while sending j: sent
/// and not yet returned, averaged over j's rounds. Credits come back only once a time-slice
/// is built and freed, so they count what is queued on the way to a node as well as what its
/// buffer holds: a node whose port or whose consumer is slow keeps the inputs' credits longer.
/// Interval k = j + assignment_distance is decided once every input (not gone) reported j:
/// from interval j's shares and the reports, a node whose median use is far above the others'
/// (or full, or rising) while they have room gets its share cut, and from then on the largest
/// share it keeps up at (its use falling or low) is searched for below the smallest it was
/// over at (its use rising or full); the others split the rest evenly, in whole time-slices
/// with the rounding carried to the next decision (the law and why: docs/design/assignment.md).
/// A node full at the floor of 1/16 of a fair share gets none, and one an input lost gets
/// none. The first assignment_distance intervals are the fixed assignment (t mod M).
///
/// Membership (compute nodes draining and joining, membership.hpp): an input flags a node that
/// asked it to drain (draining_compute) or a standby slot that asked to join (joining_compute)
/// in its reports until a decision names the change. Deciding interval k, a member flagged
/// draining by any report leaves from k's first time-slice on (share 0, for good), a slot
/// flagged joining by any report joins from there (its fair share at once: a new node with
/// an empty buffer); the decision names the change (IntervalAssignment::changes), so every
/// input applies it before it sends into k (it sends into an interval only with its
/// assignment). The coordinator names the boundary under load because a node's own credits
/// do not bound how far ahead the inputs are when its share is small (docs/design/assignment.md).
///
/// Inputs joining (input_membership.hpp): a standby input asks to join; every member input
/// flags it in its reports (LoadReport::joining_inputs) until it holds the decision naming
/// it. Deciding interval k, a standby input flagged by any report joins from k's first
/// time-slice on, once (IntervalAssignment::input_joins); from interval k on its reports are
/// waited for too. The coordinator names the boundary under load because the inputs send into
/// interval k only once they hold its assignment, so every member applies the join before it
/// sends anything at or above it (a compute node's credits bound nothing when its share is
/// small: docs/design/assignment.md).
///
/// Deterministic: a decision depends only on the reports' contents and on the decisions
/// before it, never on when the reports arrived, so replicas fed the same reports decide the
/// same, whatever the order. (Replicas that disagree on which inputs are gone may decide
/// differently: on_input_gone() is the one input that is not a report.)
///
/// No clock, sockets or threads; not thread-safe (one driver thread).
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/input_membership.hpp"
#include "netio/scheduler/membership.hpp"
#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace netio::scheduler {

/// Interval k's assignment is decided from the reports of interval k − assignment_distance.
inline constexpr IntervalIndex assignment_distance = 2;
/// LoadReport::in_use of a compute node the input lost.
inline constexpr std::uint16_t lost_compute = 0xFFFF;
/// LoadReport::in_use of a node whose credits were all out at every round: full.
inline constexpr std::uint16_t full_use = 1000;
/// LoadReport::in_use of a member that asked this input to drain it (no decision named its
/// leave yet).
inline constexpr std::uint16_t draining_compute = 0xFFFE;
/// LoadReport::in_use of a standby slot that asked this input to join (no decision named its
/// join yet).
inline constexpr std::uint16_t joining_compute = 0xFFFD;

/// What input `input` found of the compute nodes' buffers while it sent interval `interval`.
struct LoadReport {
  InputIndex input = 0;
  IntervalIndex interval = 0;
  /// Per compute node: the credits this input had out there (sent and not returned), averaged
  /// over the interval's rounds, in thousandths of those it granted (0 to full_use), or
  /// lost_compute (lost, or not a member), draining_compute, joining_compute.
  std::vector<std::uint16_t> in_use;
  /// Standby inputs that asked to join (their request reached this input) and no decision it
  /// holds named yet, in increasing order.
  std::vector<InputIndex> joining_inputs = {};

  friend bool operator==(const LoadReport&, const LoadReport&) = default;
};

/// Standby input `input` contributes from time-slice `from` on (the coordinator's boundary).
struct InputJoinChange {
  InputIndex input = 0;
  TimesliceIndex from = 0;

  friend bool operator==(const InputJoinChange&, const InputJoinChange&) = default;
};

/// Which compute node builds how many of interval `interval`'s time-slices.
struct IntervalAssignment {
  IntervalIndex interval = 0;
  std::vector<std::uint32_t> shares;  ///< per compute node; they sum to timeslices_in_interval()
  /// Membership changes from the interval's first time-slice on (`from` = interval ·
  /// timeslices_in_interval()), the coordinator's: the nodes that leave (share 0 from here)
  /// and the standby slots that join.
  std::vector<MembershipChange> changes = {};
  /// The standby inputs that join from the interval's first time-slice on (`from` as above).
  std::vector<InputJoinChange> input_joins = {};

  friend bool operator==(const IntervalAssignment&, const IntervalAssignment&) = default;
};

/// The fixed assignment as shares: every compute node rounds_per_interval() of interval j.
IntervalAssignment fixed_assignment(const SchedulerConfig& config, IntervalIndex j);

/// Interval place p (0 .. n − 1, n the shares' sum) → the compute node that builds it: smooth
/// weighted round-robin over the shares (each step the node furthest behind its share, the
/// lowest index on a tie), so a node's places are spread evenly. Equal shares give
/// 0, 1, …, M − 1 in every round: the fixed assignment.
std::vector<ComputeIndex> assignment_table(std::span<const std::uint32_t> shares);

/// Throws netio::Error (Errc::protocol_error) unless `assignment` has compute_count shares
/// summing to the interval's time-slices, and changes of slots in range at the interval's first
/// time-slice, at most one per slot, and input joins of inputs below `input_count` at the
/// interval's first time-slice, at most one per input: what a node receives is checked before use.
void check_assignment(std::uint32_t compute_count, std::uint64_t timeslices_in_interval,
                      const IntervalAssignment& assignment,
                      std::uint32_t input_count = std::numeric_limits<std::uint32_t>::max());

/// The coordinator's engine: decides each interval's assignment from the inputs' reports.
class Assigner {
 public:
  /// Validates config; `standby_inputs`: inputs that report nothing until a decision makes
  /// them join (TimesliceReceiverOptions::standby_inputs). Throws netio::Error
  /// (Errc::invalid_option) for a standby input out of range.
  explicit Assigner(const SchedulerConfig& config, const std::vector<InputIndex>& standby_inputs = {});

  /// Input report.input's report. Returns the assignments this decided, in interval order
  /// (none until every input not gone and a member at the interval reported it; a standby
  /// input's report of an interval before its join is not counted). A second report of an input for
  /// an interval, or one of an interval decided already, is ignored. Throws netio::Error
  /// (Errc::protocol_error) for an input out of range or the wrong number of nodes.
  std::vector<IntervalAssignment> on_report(const LoadReport& report);
  /// Input i is gone: its reports are no longer waited for. Returns what that decided.
  std::vector<IntervalAssignment> on_input_gone(InputIndex i);

  /// Interval j's assignment when decided (the first assignment_distance intervals always are;
  /// the latest few decided ones are kept).
  std::optional<IntervalAssignment> assignment(IntervalIndex j) const;
  /// The decided assignments from interval `from` on, in order (for an input that connects late).
  std::vector<IntervalAssignment> decided_from(IntervalIndex from) const;
  /// The next interval to be decided.
  IntervalIndex next_undecided() const noexcept { return next_report_ + assignment_distance; }
  /// Which inputs report which intervals: a standby input from the interval a decision made it
  /// join at (over intervals, not time-slices).
  const InputMembership& inputs() const noexcept { return inputs_; }

 private:
  std::vector<IntervalAssignment> decide_ready();
  IntervalAssignment decide(IntervalIndex k, const std::vector<const LoadReport*>& reports);
  // The membership changes the reports ask for, decided for interval k (and noted in left_, joined_).
  std::vector<MembershipChange> decide_membership(IntervalIndex k, const std::vector<const LoadReport*>& reports);
  // The standby inputs the reports ask to join, joining from interval k (noted in inputs_).
  std::vector<InputJoinChange> decide_input_joins(IntervalIndex k, const std::vector<const LoadReport*>& reports);

  SchedulerConfig config_;
  std::uint64_t per_interval_;
  std::vector<bool> gone_;
  InputMembership inputs_;         // over intervals
  IntervalIndex next_report_ = 0;  ///< the reports' interval decided next
  std::map<IntervalIndex, std::map<InputIndex, LoadReport>> pending_;
  std::map<IntervalIndex, IntervalAssignment> decided_;  ///< the latest few
  /// A node cut before: the share it takes is searched for between `good` (the largest share,
  /// in time-slices, it kept up at since) and `bad` (the smallest it was over at; infinity:
  /// none known).
  struct Limit {
    bool on = false;
    double good = 0;
    double bad = 0;
  };
  std::vector<std::uint32_t> over_streak_;  ///< per compute node: decisions in a row it was over
  std::vector<double> last_use_;            ///< per compute node: its use in the interval measured before (−1: none)
  std::vector<Limit> limits_;               ///< per compute node
  std::vector<double> carry_;               ///< per compute node: what rounding its share gave or took
  std::vector<bool> left_;                  ///< per compute node: a decision made it leave (for good)
  /// per compute node: the interval a decision made it join from (a standby slot), if one did
  std::vector<std::optional<IntervalIndex>> joined_;
};

}  // namespace netio::scheduler
