// SPDX-License-Identifier: MIT
/// @file
/// Which inputs contribute to each time-slice (issue 51, item 3: inputs joining during a
/// run), as pure logic: the input-side counterpart of membership.hpp.
///
/// SchedulerConfig::input_count is the number of input *slots*. A slot is a member from
/// time-slice 0, or on standby: it contributes nothing until it joins, and from its boundary
/// T on it contributes to every time-slice. A time-slice t is built from the contributions
/// of the slots that are members at t: below T without the joiner, from T on with it. The
/// boundary is named once (one compute node names it, docs/design/assignment.md) and
/// travels to every node in-band, ahead of any contribution at or above it, so every node
/// learns the same boundary before it could build a time-slice it concerns.
///
/// No clock, sockets or threads; not thread-safe.
#pragma once

#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace netio::scheduler {

class InputMembership {
 public:
  /// input_count slots, every one a member from time-slice 0 except those in `standby`.
  /// Throws netio::Error (Errc::invalid_option) for 0 slots or a standby slot out of range.
  explicit InputMembership(std::uint32_t input_count, const std::vector<InputIndex>& standby = {});

  /// Standby slot i contributes from time-slice `from` on. True when new; false when this
  /// very boundary is known already (it travels on several connections). Throws netio::Error
  /// (Errc::invalid_option) for a slot out of range, one that is not on standby, a boundary
  /// of 0 (that slot would be a member from the start), or another boundary than the one known.
  bool join(InputIndex i, TimesliceIndex from);

  bool member(InputIndex i, TimesliceIndex t) const;
  /// How many slots are members at t.
  std::uint32_t members(TimesliceIndex t) const;
  bool standby(InputIndex i) const;
  /// The boundary of standby slot i, once known.
  std::optional<TimesliceIndex> joins_from(InputIndex i) const;
  /// Whether any slot started on standby (false: every slot is a member at every t).
  bool any_standby() const noexcept { return standby_count_ != 0; }
  std::uint32_t input_count() const noexcept { return static_cast<std::uint32_t>(from_.size()); }

 private:
  // [slot]: the first time-slice it contributes to; nothing: on standby, boundary not known.
  std::vector<std::optional<TimesliceIndex>> from_;
  std::vector<bool> standby_;
  std::uint32_t standby_count_ = 0;
};

}  // namespace netio::scheduler
