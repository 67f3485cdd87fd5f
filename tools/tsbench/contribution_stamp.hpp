// SPDX-License-Identifier: MIT
// The benchmark's contributions: contribution_bytes each, the first 16 stamped with the
// time-slice and the input, so that a compute node can tell a misplaced or mixed-up
// contribution from a right one at the cost of two compares.
#pragma once

#include "netio/scheduler/time.hpp"

#include <cstddef>
#include <cstring>
#include <span>

namespace netio::tools::tsbench {

inline constexpr std::size_t stamp_bytes = 16;

inline void stamp(std::span<std::byte> contribution, scheduler::TimesliceIndex t, scheduler::InputIndex input) {
  const std::uint64_t words[2] = {t, input};
  std::memcpy(contribution.data(), words, std::min(contribution.size(), sizeof words));
}

// True when the contribution carries (t, input), or is too short to carry a stamp.
inline bool stamp_matches(std::span<const std::byte> contribution, scheduler::TimesliceIndex t,
                          scheduler::InputIndex input) {
  const std::uint64_t words[2] = {t, input};
  return std::memcmp(contribution.data(), words, std::min(contribution.size(), sizeof words)) == 0;
}

}  // namespace netio::tools::tsbench
