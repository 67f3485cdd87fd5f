// SPDX-License-Identifier: MIT
#include "netio/scheduler/reassignment.hpp"

#include <algorithm>

namespace netio::scheduler {

std::optional<Reroute> reroute(TimesliceIndex t, ComputeIndex own, const std::vector<bool>& lost) {
  const auto m = static_cast<ComputeIndex>(lost.size());
  if (own >= m) return std::nullopt;
  if (!lost[own]) return Reroute{own, 0};
  if (m == 1) return std::nullopt;
  const auto k = static_cast<ComputeIndex>((t / m) % (m - 1));
  unsigned passed = 1;  // own
  for (ComputeIndex step = 0; step < m - 1; ++step) {
    const ComputeIndex c = (own + 1 + (k + step) % (m - 1)) % m;
    if (!lost[c]) return Reroute{c, static_cast<std::uint8_t>(std::min(passed, 255u))};
    ++passed;
  }
  return std::nullopt;
}

}  // namespace netio::scheduler
