// SPDX-License-Identifier: MIT
// A capacity shared by many flows (a node's incoming or outgoing port): a token bucket and
// fair queuing between the flows that have a buffer waiting, with the tags of fair queueing
// (Demers, Keshav and Shenker, SIGCOMM 1989): a buffer starts where its flow's last one
// finished and finishes its size later, and the one finishing first goes first. Flows get
// equal bytes whatever their buffer sizes, and a small buffer (a reply, a control message)
// passes the large ones waiting, as it does at a switch that interleaves packets. A flow that
// was idle starts level with the least-served one waiting (or the last one released), so
// idling earns no burst. Ties go to the one waiting longest. Pure: time is passed in.
#pragma once

#include "backends/emulated/token_bucket.hpp"

#include <cstdint>
#include <map>
#include <set>
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
  // The fair pick first: the earliest virtual finish, then the one waiting longest.
  struct Key {
    double finish;
    std::uint64_t order;  // when it began waiting
    friend bool operator<(const Key& a, const Key& b) {
      return a.finish != b.finish ? a.finish < b.finish : a.order < b.order;
    }
  };
  struct Waiting {
    FlowId flow;
    std::size_t bytes;
    double start;
  };

  TokenBucket bucket_;
  std::map<Key, Waiting> waiting_;                  // O(log n) per buffer, however many flows wait
  std::unordered_map<FlowId, Key> waiting_key_;     // the flows in waiting_
  std::multiset<double> starts_;                    // the start tags in waiting_
  std::unordered_map<FlowId, double> finished_;     // virtual finish of the flow's last buffer
  double virtual_time_ = 0;                         // start tag of the last buffer released
  std::uint64_t next_order_ = 0;
};

}  // namespace netio::emulated
