// SPDX-License-Identifier: MIT
#include "misbehaviour_cooldown.hpp"

#include <algorithm>
#include <utility>

namespace netio::detail {

void MisbehaviourCooldown::offended(const std::string& peer, std::string why, Clock::time_point now) {
  if (!enabled()) return;
  auto it = peers_.find(peer);
  if (it == peers_.end()) {
    if (peers_.size() >= capacity_) {
      // Forget expired holds first, then the one ending soonest.
      std::erase_if(peers_, [now](const auto& entry) { return entry.second.until + entry.second.length <= now; });
      if (peers_.size() >= capacity_) {
        peers_.erase(std::min_element(peers_.begin(), peers_.end(),
                                      [](const auto& a, const auto& b) { return a.second.until < b.second.until; }));
      }
    }
    it = peers_.emplace(peer, Record{}).first;
  }
  Record& record = it->second;
  // A repeat offence: while held off, or within as long again after the hold ended.
  const bool repeat = record.strikes > 0 && now < record.until + record.length;
  record.strikes = repeat ? std::min(record.strikes + 1, max_doublings + 1) : 1;
  record.length = base_ * (Clock::duration::rep{1} << (record.strikes - 1));
  record.until = now + record.length;
  record.why = std::move(why);
}

std::optional<MisbehaviourCooldown::Hold> MisbehaviourCooldown::held(const std::string& peer,
                                                                     Clock::time_point now) const {
  const auto it = peers_.find(peer);
  if (it == peers_.end() || now >= it->second.until) return std::nullopt;
  return Hold{it->second.until - now, it->second.length, it->second.why};
}

}  // namespace netio::detail
