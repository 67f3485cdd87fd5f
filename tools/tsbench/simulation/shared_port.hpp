// SPDX-License-Identifier: MIT
// One shared capacity of the simulated network — a node's out= or in= port, or the switch
// core — shaped as the emulated back-end shapes a node's port: a token bucket
// (emulated::TokenBucket, its burst included) and, between the connections that have a
// buffer waiting, fair queueing (emulated::SharedCapacity: the buffer that would finish first if the
// connections were served byte by byte goes first) or first come, first served. A buffer leaves whole, when the bucket allows it; the
// buffers of one connection leave in the order they came.
//
// Pure: no clock, no events. The caller hands buffers over with arrive(), asks
// next_release() when the next one may leave, and takes it with release() at that time.
// Connections are numbered by the caller, densely from 0 at each port (its queues are a
// vector indexed by that number). Memory: the waiting buffers, bounded by what the caller's
// protocol keeps in flight. Cost: O(log n) per buffer in n connections waiting, no lookup, no
// allocation once the queues have grown.
#pragma once

#include "backends/emulated/shared_capacity.hpp"

#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace netio::tools::tsbench::simulation {

enum class PortSharing { fair, fifo };

const char* to_string(PortSharing sharing) noexcept;

class SharedPort {
 public:
  using Connection = std::uint32_t;  // the caller's number of a connection at this port
  using Item = std::uint32_t;  // the caller's handle of a buffer

  SharedPort() = default;  // unlimited: limited() is false, nothing waits
  SharedPort(RateLimit limit, emulated::SlowdownSchedule schedule, PortSharing sharing);

  bool limited() const noexcept { return limited_; }
  bool empty() const noexcept { return waiting_ == 0; }

  // A buffer of `bytes` on `connection` reaches the port at `now`.
  void arrive(Connection connection, std::uint64_t bytes, Item item, scheduler::Time now);
  // When the next buffer may leave (≥ now); none when nothing waits or the rate is 0 for good.
  std::optional<scheduler::Time> next_release(scheduler::Time now);
  // Takes the buffer that may leave now (next_release(now) <= now).
  Item release(scheduler::Time now);

 private:
  struct Waiting {
    std::uint64_t bytes;
    Item item;
  };
  // fair: a connection's waiting buffers, a list through the port's pool of waiting buffers
  // (a connection holds one or two at a time, the port thousands of connections: a small
  // record per connection, and the pool's slots, reused last-freed first, stay in the caches).
  // A slot holds the size of the buffer behind it: the connection's head waits in capacity_
  // with its size, and a release reads the slot it frees only, not the next one (at 192 x 192
  // the slots of an in-port are cold by the time they leave: one cache miss, not two).
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Queue {
    std::uint32_t head = kNone;
    std::uint32_t tail = kNone;
    std::uint32_t size = 0;
  };
  struct Slot {
    std::uint64_t next_bytes = 0;  // the size of the connection's next one
    Item item = 0;
    std::uint32_t next = kNone;  // the connection's next one, or the next free slot
  };
  struct Popped {
    Item item;
    std::uint64_t next_bytes;  // of the new head, when the queue is not empty
  };
  void push(Queue& queue, Waiting w);
  Popped pop(Queue& queue);

  bool limited_ = false;
  PortSharing sharing_ = PortSharing::fair;
  std::size_t waiting_ = 0;
  // fair: the connections' queues, their heads waiting in capacity_ (as flows of the same number)
  emulated::SharedCapacity capacity_{RateLimit{}, emulated::SlowdownSchedule{}, scheduler::Time{0}};
  std::vector<Queue> queues_;
  std::vector<Slot> slots_;
  std::uint32_t free_ = kNone;  // the free slots, a list
  // fifo: one queue, the bucket alone
  emulated::TokenBucket bucket_;
  std::deque<Waiting> fifo_;
};

}  // namespace netio::tools::tsbench::simulation
