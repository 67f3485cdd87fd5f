// SPDX-License-Identifier: MIT
// Victim selection for a bounded set of open connections, as pure logic: no sockets, no
// threads, no clock. The connection manager tells it which peers open, are used and close;
// it answers which open peer to tear down next under LRU or LRU-M (netio/socket_options.hpp).
//
// Peers are small integer ids chosen by the caller. Tear-down counts are kept per peer for
// the selector's whole life (LRU-M orders its queues by them), also while a peer is closed.
// Thread-safety: none; the caller serialises. Costs: O(1) per call except victim(), which
// walks queues from their least recently used end past ineligible peers, and, under LRU-M,
// O(log q) in the number of distinct tear-down counts.
#pragma once

#include "netio/socket_options.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <unordered_map>

namespace netio::detail {

class VictimSelector {
 public:
  using PeerId = std::size_t;

  explicit VictimSelector(ConnectionPolicy policy) : policy_(policy) {}

  // `peer` is open now, as the most recently used. Opening an open peer only uses it.
  void opened(PeerId peer);
  // A message went to `peer`: it becomes the most recently used. Ignored for closed peers.
  void used(PeerId peer);
  // The peer to tear down next, or nullopt when no open peer is `eligible` (an empty
  // predicate takes every peer). Does not change anything.
  std::optional<PeerId> victim(const std::function<bool(PeerId)>& eligible = {}) const;
  // `peer` is torn down: it leaves the open set and its tear-down count grows by one.
  void torn_down(PeerId peer);
  // `peer` closed for another reason (its connection failed, the socket closes): it leaves
  // the open set, its tear-down count unchanged.
  void closed(PeerId peer);

  bool is_open(PeerId peer) const { return where_.contains(peer); }
  std::size_t open_count() const noexcept { return where_.size(); }
  std::uint64_t tear_downs(PeerId peer) const;
  ConnectionPolicy policy() const noexcept { return policy_; }

 private:
  using Queue = std::list<PeerId>;  // front: most recently used
  struct Position {
    std::uint64_t queue;
    Queue::iterator at;
  };
  std::uint64_t queue_of(PeerId peer) const { return policy_ == ConnectionPolicy::lru ? 0 : tear_downs(peer); }
  void remove(PeerId peer);

  ConnectionPolicy policy_;
  std::map<std::uint64_t, Queue> queues_;  // by tear-down count (LRU: one queue, 0); no empty queue kept
  std::unordered_map<PeerId, Position> where_;
  std::unordered_map<PeerId, std::uint64_t> tear_downs_;
};

}  // namespace netio::detail
