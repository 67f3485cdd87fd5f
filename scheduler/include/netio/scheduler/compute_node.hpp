// SPDX-License-Identifier: MIT
/// @file
/// One compute node of the time-slice building pattern, as pure logic: which time-slice is
/// ready to be handed over (complete, or given up), in order, and whose credits its release
/// returns.
///
/// Time-slices of this node are self, self + M, self + 2M, ... and are handed over in that
/// order. A time-slice is ready when every input contributed (complete), or, given up as
/// incomplete, when every input either contributed or is gone (on_input_gone: its connection
/// closed, so it never will), or when `timeout` has passed since its first contribution
/// arrived. release() frees it and names the inputs owed a credit (those that
/// contributed). A consumer that keeps time-slices after they were handed over (and frees
/// them later, in any order) calls hand_over() first: the next one becomes the oldest open,
/// and the handed-over contributions stay held, with their inputs' credits, until release().
/// Each input holds at most credits_per_input contributions here at once: one beyond that is
/// refused (the input broke the credit protocol).
///
/// With SchedulerConfig::assignment = load, this node's time-slices are those the coordinator
/// assigned it (assigner.hpp), not self + k·M: it takes a contribution to any time-slice (the
/// inputs send by the assignment they all received) and hands them over in index order as
/// well, since every input sends in index order on a connection that keeps it.
///
/// Reassigned time-slices (reassignment.hpp): a lost node's time-slices come here with an
/// attempt above 0 (on_reassigned()), outside this node's own order: each is handed over as
/// soon as it is ready (complete, every input contributed or gone, or timed out), the lowest
/// index first, before the oldest open time-slice of its own. They are held apart from the
/// credits (an input sends at most credits_per_input of them here at once, its own window).
/// A time-slice another node is known to have built (an input's LostCompute names it:
/// on_built_elsewhere()) is not built here: its contributions are freed and later ones are late.
///
/// Inputs on standby (input_membership.hpp): a time-slice is built from the inputs that are
/// members at it, complete once each of them contributed; a standby input's contribution is
/// expected only from its boundary on (on_input_joins(), told before any time-slice at or
/// above the boundary can complete), and one before it is not_mine.
///
/// No clock, sockets or threads; not thread-safe (one driver thread).
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/input_membership.hpp"
#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace netio::scheduler {

class ComputeNode {
 public:
  /// Validates config; throws netio::Error (Errc::invalid_option) for self out of range, 0
  /// credits or a standby input out of range. `standby_inputs`: not members until they join.
  ComputeNode(const SchedulerConfig& config, ComputeIndex self, std::uint32_t credits_per_input,
              const std::vector<InputIndex>& standby_inputs = {});

  enum class Arrival {
    accepted,     ///< held until its time-slice is released
    completes,    ///< accepted, and its time-slice is complete now
    late,         ///< its time-slice was released already (given up): return the credit at once
    not_mine,     ///< fixed assignment: t mod M is another compute node: the input is faulty
    duplicate,    ///< this input contributed to t already: faulty
    over_credit,  ///< the input holds all its credits here already: faulty
  };
  Arrival on_contribution(InputIndex i, TimesliceIndex t, Time now);

  /// A contribution to t, reassigned here from a lost node with delivery number `attempt` (> 0).
  /// late: t was built elsewhere (return the credit at once); not_mine: attempt 0.
  Arrival on_reassigned(InputIndex i, TimesliceIndex t, std::uint8_t attempt, Time now);
  /// t was built on the lost node (an input had its credit): not to be built here. Returns the
  /// inputs whose contributions to t this frees (owed a credit), ascending; none if t was not
  /// reassigned here (yet).
  std::vector<InputIndex> on_built_elsewhere(TimesliceIndex t);

  /// Input i will send nothing more (its connection is gone).
  void on_input_gone(InputIndex i);

  /// Standby input i contributes from time-slice `from` on (InputMembership::join()). True
  /// when new. Throws netio::Error (Errc::invalid_option) as InputMembership::join() does,
  /// and for a boundary at or below a time-slice this node handed over already (too late:
  /// it was built without i).
  bool on_input_joins(InputIndex i, TimesliceIndex from);
  const InputMembership& input_membership() const noexcept { return inputs_; }

  /// Fixed assignment: a membership change (membership.hpp) routes a non-member slot's
  /// time-slices to the members, so from now on this node takes a contribution to any
  /// time-slice (as under load) and hands them over in index order; the inputs send them in
  /// index order (InputNode::in_node_order()). Idempotent; nothing under load.
  void accept_rerouted();

  struct Ready {
    TimesliceIndex timeslice = 0;
    bool complete = false;
    std::vector<bool> contributed;  ///< per input
    std::uint8_t attempt = 0;       ///< its delivery number: above 0 when reassigned here
  };
  /// The oldest open time-slice when it is ready (see above); nothing otherwise. A zero or
  /// negative timeout never gives up on time.
  std::optional<Ready> next_ready(Time now, Duration timeout) const;
  /// Hands t (the one next_ready() named) over without freeing it: it is no longer open,
  /// later contributions to it are late, and its contributions stay held until release(t).
  /// Throws (Errc::invalid_option) for a t that is not the oldest open.
  void hand_over(TimesliceIndex t);
  /// Frees t, the one next_ready() named or one handed over (in any order), and returns the
  /// inputs owed a credit, ascending. Throws (Errc::invalid_option) for a t neither open nor
  /// handed over.
  std::vector<InputIndex> release(TimesliceIndex t);

  std::size_t open_timeslices() const noexcept { return open_.size(); }
  std::size_t reassigned_open() const noexcept { return reassigned_.size(); }
  std::size_t handed_over_timeslices() const noexcept { return handed_over_.size(); }
  std::uint32_t held(InputIndex i) const { return held_.at(i); }  // contributions held from i
  std::uint32_t credits_per_input() const noexcept { return credits_; }
  /// The first time-slice not yet released (in this node's order).
  TimesliceIndex next_expected() const noexcept { return next_expected_; }

 private:
  struct Open {
    Time first_arrival{0};
    std::vector<bool> contributed;
    std::uint32_t count = 0;
    std::uint8_t attempt = 0;
  };
  // Input i's contribution to t, held in `where` (own or reassigned) within i's count in `held`.
  Arrival take(std::map<TimesliceIndex, Open>& where, std::vector<std::uint32_t>& held, InputIndex i, TimesliceIndex t,
               std::uint8_t attempt, Time now);
  // Whether `open` (time-slice t) is ready at now: every member input contributed or gone, or timed out.
  bool ready(TimesliceIndex t, const Open& open, Time now, Duration timeout) const;
  bool complete(TimesliceIndex t, const Open& open) const { return open.count == inputs_.members(t); }
  void note_handed_over(TimesliceIndex t);
  std::vector<InputIndex> free_contributions(const std::vector<bool>& contributed);

  std::uint32_t input_count_;
  std::uint32_t compute_count_;
  ComputeIndex self_;
  std::uint32_t credits_;
  bool by_load_;
  InputMembership inputs_;
  TimesliceIndex highest_handed_over_ = 0;  ///< of any kind, for on_input_joins()'s check
  bool handed_over_any_ = false;
  TimesliceIndex next_expected_;
  std::map<TimesliceIndex, Open> open_;
  std::map<TimesliceIndex, std::vector<bool>> handed_over_;  ///< contributed, per input
  std::vector<std::uint32_t> held_;
  std::vector<bool> gone_;
  std::map<TimesliceIndex, Open> reassigned_;   ///< open reassigned time-slices
  std::vector<std::uint32_t> reassigned_held_;  ///< per input
  std::set<TimesliceIndex> built_elsewhere_;    ///< not to be built here
  std::map<TimesliceIndex, std::vector<bool>> handed_over_reassigned_;
};

}  // namespace netio::scheduler
