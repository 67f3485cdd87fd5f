// SPDX-License-Identifier: MIT
// A capacity shared by many flows (a node's incoming or outgoing port): a token bucket and
// fair queuing between the flows that have a buffer waiting, with the tags of fair queueing
// (Demers, Keshav and Shenker, SIGCOMM 1989): a buffer starts where its flow's last one
// finished and finishes its size later, and the one finishing first goes first. Flows get
// equal bytes whatever their buffer sizes, and a small buffer (a reply, a control message)
// passes the large ones waiting, as it does at a switch that interleaves packets. A flow that
// was idle starts level with the least-served one waiting (or the last one released), so
// idling earns no burst. Ties go to the one waiting longest. Pure: time is passed in.
//
// Flows are numbered by the caller, densely from 0 (the state is a vector indexed by FlowId:
// memory grows with the largest one); a number may be used again after remove().
// Cost (the simulator passes every buffer of a run through one): enqueue and release are
// O(log n) in contiguous heaps, no allocation once they have grown; remove() is O(n) (a
// connection closing).
#pragma once

#include "netio/emulated/token_bucket.hpp"

#include <cstdint>
#include <vector>

namespace netio::emulated {

class SharedCapacity {
 public:
  using FlowId = std::uint32_t;

  SharedCapacity(RateLimit limit, SlowdownSchedule schedule, Nanos now) : bucket_(limit, std::move(schedule), now) {}

  void reconfigure(RateLimit limit, SlowdownSchedule schedule, Nanos now) {
    bucket_.reconfigure(limit, std::move(schedule), now);
  }
  // The flow's next buffer (`bytes`) is ready to go; at most one waiting buffer per flow.
  void enqueue(FlowId flow, std::size_t bytes);
  // The flow leaves (closed): its waiting buffer too.
  void remove(FlowId flow) noexcept;
  bool waiting(FlowId flow) const noexcept;
  bool empty() const noexcept { return by_finish_.empty(); }
  // When the fair pick may go (≤ now: at once). Requires !empty().
  Nanos next_release_time(Nanos now);
  // Takes the fair pick and charges the bucket. Requires next_release_time(now) <= now.
  FlowId release(Nanos now);

 private:
  static constexpr std::uint64_t not_waiting = ~std::uint64_t{0};
  struct Flow {
    double finished = 0;                  // virtual finish of its last buffer released
    std::uint64_t waiting = not_waiting;  // the order of its waiting buffer
  };
  // A waiting buffer. The fair pick first: the earliest virtual finish, then the one waiting
  // longest (order: when it began waiting; unique).
  struct Waiting {
    double finish;
    std::uint64_t order;
    double start;
    std::size_t bytes;
    FlowId flow;
  };
  // A start tag of a buffer that waits, or waited (stale once its flow's waiting order differs).
  struct Start {
    double start;
    std::uint64_t order;
    FlowId flow;
  };
  double least_waiting_start();  // of the waiting buffers; requires !empty()
  void drop_stale_starts();

  TokenBucket bucket_;
  std::vector<Flow> flows_;         // by FlowId
  std::vector<Waiting> by_finish_;  // a heap, the fair pick on top
  std::vector<Start> by_start_;     // a heap, the least start on top; stale ones dropped lazily
  double virtual_time_ = 0;         // start tag of the last buffer released
  std::uint64_t next_order_ = 0;
};

}  // namespace netio::emulated
