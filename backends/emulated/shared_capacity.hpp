// A capacity shared by many flows (a node's incoming or outgoing port): a token bucket and
// fair queuing between the flows that have a buffer waiting. The flow served least so far
// goes first (a flow that was idle starts level with the least-served waiting one, so idling
// earns no burst); ties go to the one waiting longest. Pure: time is passed in.
#pragma once

#include "backends/emulated/token_bucket.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

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
  struct Waiting {
    FlowId flow;
    std::size_t bytes;
  };
  std::size_t pick() const noexcept;  // index into waiting_

  TokenBucket bucket_;
  std::vector<Waiting> waiting_;                   // in the order they arrived
  std::unordered_map<FlowId, double> served_;      // bytes served (virtual: see enqueue)
  double virtual_time_ = 0;                        // served count of the last release's flow
};

}  // namespace netio::emulated
