// SPDX-License-Identifier: MIT
// The simulator's one-per-owner timers (an input's due timer: a newer one replaces the
// older), kept apart from the event queue so that re-arming one (the pattern re-arms after
// every credit and acknowledgement) moves it instead of leaving a stale event behind. Each
// timer carries the event queue's (time, sequence) key, so that taking the earlier of the two
// queues' tops gives the order one queue would.
//
// An indexed binary heap over owners 0..n-1: arm, disarm and pop are O(log n), no allocation
// after construction. Not thread-safe.
#pragma once

#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <limits>
#include <vector>

namespace netio::scheduler::simulation {

class DueTimers {
 public:
  struct Key {
    scheduler::Time at{0};
    std::uint64_t sequence = 0;
    friend bool operator<(const Key& a, const Key& b) { return a.at != b.at ? a.at < b.at : a.sequence < b.sequence; }
  };

  explicit DueTimers(std::uint32_t owners) : keys_(owners), place_(owners, not_armed) { heap_.reserve(owners); }

  bool empty() const noexcept { return heap_.empty(); }
  // The earliest armed timer: its owner and key. Requires !empty().
  std::uint32_t top() const noexcept { return heap_.front(); }
  const Key& key(std::uint32_t owner) const noexcept { return keys_[owner]; }

  // Arms (or moves) owner's timer to `key`.
  void arm(std::uint32_t owner, Key key) {
    const bool armed = place_[owner] != not_armed;
    const bool earlier = key < keys_[owner];
    keys_[owner] = key;
    if (!armed) {
      place_[owner] = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back(owner);
      up(place_[owner]);
    } else if (earlier) {
      up(place_[owner]);
    } else {
      down(place_[owner]);
    }
  }
  // Takes the earliest timer off (it fired). Requires !empty().
  void pop() noexcept {
    place_[heap_.front()] = not_armed;
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) {
      place_[heap_.front()] = 0;
      down(0);
    }
  }

 private:
  static constexpr std::uint32_t not_armed = std::numeric_limits<std::uint32_t>::max();

  void put(std::uint32_t place, std::uint32_t owner) noexcept {
    heap_[place] = owner;
    place_[owner] = place;
  }
  void up(std::uint32_t place) noexcept {
    const std::uint32_t owner = heap_[place];
    while (place > 0) {
      const std::uint32_t parent = (place - 1) / 2;
      if (!(keys_[owner] < keys_[heap_[parent]])) break;
      put(place, heap_[parent]);
      place = parent;
    }
    put(place, owner);
  }
  void down(std::uint32_t place) noexcept {
    const std::uint32_t owner = heap_[place];
    const auto size = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t child = 2 * place + 1;
      if (child >= size) break;
      if (child + 1 < size && keys_[heap_[child + 1]] < keys_[heap_[child]]) ++child;
      if (!(keys_[heap_[child]] < keys_[owner])) break;
      put(place, heap_[child]);
      place = child;
    }
    put(place, owner);
  }

  std::vector<Key> keys_;             // by owner
  std::vector<std::uint32_t> place_;  // by owner: its place in heap_, or not_armed
  std::vector<std::uint32_t> heap_;   // owners, the earliest key on top
};

}  // namespace netio::scheduler::simulation
