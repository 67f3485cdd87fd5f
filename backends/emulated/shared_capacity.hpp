// SPDX-License-Identifier: MIT
// A capacity shared by many flows (a node's incoming or outgoing port): a token bucket and
// fair queuing between the flows that have a buffer waiting. The flow served least so far
// goes first (a flow that was idle starts level with the least-served waiting one, so idling
// earns no burst); ties go to the one waiting longest. Pure: time is passed in.
#pragma once

#include "backends/emulated/token_bucket.hpp"

#include <cstdint>
#include <map>
#include <unordered_map>

namespace netio::emulated {

class SharedCapacity {
 public:
  using FlowId = std::uint64_t;

  SharedCapacity(RateLimit limit, SlowdownSchedule schedule, Nanos now) : bucket_(limit, std::move(schedule), now) {}

  void reconfigure(RateLimit limit, SlowdownSchedule schedule, Nanos now) {
    bucket_.reconfigure(limit, std::move(schedule), now);
  }
  // The flow's next buffer (`bytes`) is ready to go; at most one waiting buffer per flow.
  void enqueue(FlowId flow, std::size_t bytes);
  // The flow leaves (closed): its waiting buffer too.
  void remove(FlowId flow) noexcept;
  bool waiting(FlowId flow) const noexcept;
  bool empty() const noexcept { return waiting_.empty(); }
  // When the fair pick may go (≤ now: at once). Requires !empty().
  Nanos next_release_time(Nanos now);
  // Takes the fair pick and charges the bucket. Requires next_release_time(now) <= now.
  FlowId release(Nanos now);

 private:
  // The fair pick first: least served, then the one waiting longest.
  struct Key {
    double served;
    std::uint64_t order;  // when it began waiting
    friend bool operator<(const Key& a, const Key& b) {
      return a.served != b.served ? a.served < b.served : a.order < b.order;
    }
  };
  struct Waiting {
    FlowId flow;
    std::size_t bytes;
  };

  TokenBucket bucket_;
  std::map<Key, Waiting> waiting_;                  // O(log n) per buffer, however many flows wait
  std::unordered_map<FlowId, Key> waiting_key_;     // the flows in waiting_
  std::unordered_map<FlowId, double> served_;       // bytes served (virtual: see enqueue)
  double virtual_time_ = 0;                         // served count of the last release's flow
  std::uint64_t next_order_ = 0;
};

}  // namespace netio::emulated
