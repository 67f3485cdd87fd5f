// SPDX-License-Identifier: MIT
/// @file
/// Which compute slots are members at each time-slice, and where a non-member's time-slices
/// go (issue 51, item 3: compute nodes draining and joining during a run), as pure logic.
///
/// SchedulerConfig::compute_count is the number of compute *slots* (DFS's places, the
/// assignment's shares and compute_endpoints keep their indices). A slot is a member from
/// the start or not (a standby slot, which may join later), and changes at time-slice
/// boundaries: "slot c leaves from T" (drained: it builds every time-slice below T of its
/// own, nothing from T on) or "slot c joins from T". Every input holds the same history
/// (the boundaries travel in-band, see the pattern's wire.hpp), so every input routes a
/// time-slice to the same node without asking anyone.
///
/// A time-slice whose own slot (t mod M, or the coordinator's under assignment by load) is
/// not a member at t is routed around it as reroute() routes around a lost node, but nothing
/// was sent anywhere before: its delivery number stays 0 (`attempt` counts losses only).
///
/// No clock, sockets or threads; not thread-safe.
#pragma once

#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace netio::scheduler {

struct MembershipChange {
  ComputeIndex compute = 0;
  bool joins = false;       ///< joins from `from` on; false: leaves (drained) from `from` on
  TimesliceIndex from = 0;  ///< the boundary: a round start (a multiple of compute_count)

  friend bool operator==(const MembershipChange&, const MembershipChange&) = default;
};

class Membership {
 public:
  /// compute_count slots, every one a member from time-slice 0 except those in `standby`.
  /// Throws netio::Error (Errc::invalid_option) for 0 slots or a standby slot out of range.
  explicit Membership(std::uint32_t compute_count, const std::vector<ComputeIndex>& standby = {});

  /// Adds a change. True when it is new; false when this very change is known already (it
  /// travels on several connections). Throws netio::Error (Errc::invalid_option) for a slot
  /// out of range, a boundary that is not a round start, one not after the slot's last
  /// change, or a change that changes nothing (a member joining, a non-member leaving).
  bool apply(const MembershipChange& change);

  bool member(ComputeIndex c, TimesliceIndex t) const;
  /// Whether every slot is a member for every t in [from, to).
  bool all_members(TimesliceIndex from, TimesliceIndex to) const;
  /// The node that builds time-slice t whose own slot is `own`: own when a member at t,
  /// otherwise the first member of own + 1 + k, own + 2 + k, ... (mod M, own left out),
  /// k = (t / M) mod (M − 1) (reroute()'s order: a leaving node's time-slices spread evenly
  /// over the others); nothing when no slot is a member at t.
  std::optional<ComputeIndex> route(TimesliceIndex t, ComputeIndex own) const;
  /// The slots that are not members at t (true), by index: reroute()'s "lost" set, to which
  /// a driver adds the nodes it lost.
  std::vector<bool> non_members(TimesliceIndex t) const;
  /// Where c's membership ends for good: the boundary of its last change when that is a
  /// leave; nothing while it is (or will be) a member, or never was one.
  std::optional<TimesliceIndex> leaves_from(ComputeIndex c) const;
  /// The boundary from which c is a member, when its last change is a join.
  std::optional<TimesliceIndex> joins_from(ComputeIndex c) const;

  std::uint32_t compute_count() const noexcept { return static_cast<std::uint32_t>(initial_.size()); }
  /// Changes applied so far (each once).
  std::size_t changes() const noexcept { return change_count_; }

 private:
  std::vector<bool> initial_;                           // [slot]: a member at time-slice 0
  std::vector<std::vector<MembershipChange>> by_slot_;  // [slot]: its changes, by boundary
  std::size_t change_count_ = 0;
  TimesliceIndex first_boundary_ = 0;  // the lowest boundary of any change (none: unused)
  bool any_standby_ = false;
};

}  // namespace netio::scheduler
