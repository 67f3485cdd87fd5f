// SPDX-License-Identifier: MIT
#include "victim_selector.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <string>

namespace netio {

std::string_view to_string(ConnectionPolicy policy) noexcept {
  switch (policy) {
    case ConnectionPolicy::lru: return "lru";
    case ConnectionPolicy::lru_m: return "lru-m";
  }
  return "?";
}

ConnectionPolicy parse_connection_policy(std::string_view text) {
  if (text == "lru") return ConnectionPolicy::lru;
  if (text == "lru-m" || text == "lru_m") return ConnectionPolicy::lru_m;
  throw Error(Errc::invalid_option, fmt::format("connection policy '{}': not lru or lru-m", text));
}

namespace detail {

void VictimSelector::opened(PeerId peer) {
  if (is_open(peer)) {
    used(peer);
    return;
  }
  const std::uint64_t q = queue_of(peer);
  Queue& queue = queues_[q];
  queue.push_front(peer);
  where_.emplace(peer, Position{q, queue.begin()});
}

void VictimSelector::used(PeerId peer) {
  const auto it = where_.find(peer);
  if (it == where_.end()) return;
  Queue& queue = queues_.at(it->second.queue);
  queue.splice(queue.begin(), queue, it->second.at);  // iterators stay valid
}

std::optional<VictimSelector::PeerId> VictimSelector::victim(const std::function<bool(PeerId)>& eligible) const {
  // Queues in ascending tear-down count; each from its least recently used end.
  for (const auto& [count, queue] : queues_) {
    for (auto it = queue.rbegin(); it != queue.rend(); ++it) {
      if (!eligible || eligible(*it)) return *it;
    }
  }
  return std::nullopt;
}

void VictimSelector::remove(PeerId peer) {
  const auto it = where_.find(peer);
  if (it == where_.end()) return;
  const auto queue = queues_.find(it->second.queue);
  queue->second.erase(it->second.at);
  if (queue->second.empty()) queues_.erase(queue);
  where_.erase(it);
}

void VictimSelector::torn_down(PeerId peer) {
  remove(peer);
  ++tear_downs_[peer];
}

void VictimSelector::closed(PeerId peer) { remove(peer); }

std::uint64_t VictimSelector::tear_downs(PeerId peer) const {
  const auto it = tear_downs_.find(peer);
  return it == tear_downs_.end() ? 0 : it->second;
}

}  // namespace detail
}  // namespace netio
