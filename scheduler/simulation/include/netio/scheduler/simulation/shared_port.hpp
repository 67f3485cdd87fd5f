// SPDX-License-Identifier: MIT
// One shared capacity of the simulated network — a node's out= or in= port, or the switch
// core — shaped as the emulated back-end shapes a node's port: a token bucket
// (emulated::TokenBucket, its burst included) and, between the connections that have a
// buffer waiting, fair queueing (emulated::SharedCapacity: the buffer that would finish first if the
// connections were served byte by byte goes first) or first come, first served. A buffer leaves whole, when the bucket
// allows it; the buffers of one connection leave in the order they came.
//
// Pure: no clock, no events. The caller hands buffers over with arrive(), asks
// next_release() when the next one may leave, and takes it with release() at that time.
// Connections are numbered by the caller, densely from 0 at each port (its queues are a
// vector indexed by that number). Memory: the waiting buffers, bounded by what the caller's
// protocol keeps in flight. Cost: O(log n) per buffer in n connections waiting, no lookup, no
// allocation once the queues have grown.
//
// Priority lane (fifo only, our model of a switch's strict-priority class for control
// traffic): a buffer that arrives with `priority` waits in a queue of its own, served before
// the first-come-first-served one whenever both hold a buffer; a buffer already released is
// not preempted. Fair ports have no lane: a small buffer passes there by its finish time.
#pragma once

#include "netio/emulated/shared_capacity.hpp"

#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <vector>

namespace netio::scheduler::simulation {

enum class PortSharing { fair, fifo };

std::string_view to_string(PortSharing sharing) noexcept;

// Item: what the caller hands over with a buffer and takes back at its release, kept by value
// in the port (the simulator keeps its whole message there: at 192 x 192 a buffer waits a
// round at its in-port, and a message kept elsewhere would be one more cache miss at release).
template <typename Item = std::uint32_t>
class SharedPort {
 public:
  using Connection = std::uint32_t;  // the caller's number of a connection at this port

  SharedPort() = default;  // unlimited: limited() is false, nothing waits
  SharedPort(RateLimit limit, emulated::SlowdownSchedule schedule, PortSharing sharing)
      : limited_(static_cast<bool>(limit)),
        sharing_(sharing),
        capacity_(limit, schedule, scheduler::Time{0}),
        bucket_(limit, schedule, scheduler::Time{0}) {}

  bool limited() const noexcept { return limited_; }
  bool empty() const noexcept { return waiting_ == 0; }

  // A buffer of `bytes` on `connection` reaches the port at `now`; `priority` (fifo): on the
  // priority lane.
  void arrive(Connection connection, std::uint64_t bytes, const Item& item, scheduler::Time now,
              bool priority = false) {
    (void)now;
    ++waiting_;
    if (sharing_ == PortSharing::fifo) {
      (priority ? priority_ : fifo_).push_back(Waiting{bytes, item});
      return;
    }
    if (connection >= queues_.size()) queues_.resize(connection + 1);
    Queue& queue = queues_[connection];
    push(queue, bytes, item);
    if (queue.size == 1) capacity_.enqueue(connection, bytes);
  }
  // When the next buffer may leave (≥ now); none when nothing waits or the rate is 0 for good.
  std::optional<scheduler::Time> next_release(scheduler::Time now) {
    if (waiting_ == 0) return std::nullopt;
    const auto at =
        sharing_ == PortSharing::fifo ? bucket_.ready_at(now, fifo_head().bytes) : capacity_.next_release_time(now);
    if (at == scheduler::Time::max()) return std::nullopt;
    return at;
  }
  // Takes the buffer that may leave now (next_release(now) <= now).
  Item release(scheduler::Time now) {
    --waiting_;
    if (sharing_ == PortSharing::fifo) {
      auto& lane = priority_.empty() ? fifo_ : priority_;
      const Waiting head = lane.front();
      lane.pop_front();
      bucket_.consume(now, head.bytes);
      return head.item;
    }
    const auto connection = capacity_.release(now);
    Queue& queue = queues_[connection];
    std::uint64_t next_bytes = 0;
    Item item = pop(queue, next_bytes);
    if (queue.size > 0) capacity_.enqueue(connection, next_bytes);
    return item;
  }

 private:
  struct Waiting {
    std::uint64_t bytes;
    Item item;
  };
  const Waiting& fifo_head() const { return priority_.empty() ? fifo_.front() : priority_.front(); }
  // fair: a connection's waiting buffers, a list through the port's pool of waiting buffers
  // (a connection holds one or two at a time, the port thousands of connections: a small
  // record per connection, and the pool's slots, reused last-freed first, stay in the caches).
  // At 192 x 192 a buffer waits a round at its in-port and its slot is cold when it leaves,
  // so the port reads a slot only there: a slot holds the size of the buffer behind it (the
  // connection's head waits in capacity_ with its size, so a release reads the slot it frees,
  // not the next one), and the free slots are a stack of their own (taking one reads no slot).
  static constexpr std::uint32_t no_slot = ~std::uint32_t{0};
  struct Queue {
    std::uint32_t head = no_slot;
    std::uint32_t tail = no_slot;
    std::uint32_t size = 0;
  };
  struct Slot {
    Item item{};
    std::uint64_t next_bytes = 0;  // the size of the connection's next one
    std::uint32_t next = no_slot;  // the connection's next one
  };
  void push(Queue& queue, std::uint64_t bytes, const Item& item) {
    std::uint32_t slot = 0;
    if (free_.empty()) {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back(Slot{});
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    slots_[slot] = Slot{item, 0, no_slot};
    if (queue.size == 0) {
      queue.head = slot;
    } else {
      slots_[queue.tail].next = slot;
      slots_[queue.tail].next_bytes = bytes;
    }
    queue.tail = slot;
    ++queue.size;
  }
  // Takes the queue's head; `next_bytes`: the size of the new head, when there is one.
  Item pop(Queue& queue, std::uint64_t& next_bytes) {
    const std::uint32_t slot = queue.head;
    Slot& s = slots_[slot];
    next_bytes = s.next_bytes;
    queue.head = s.next;
    --queue.size;
    free_.push_back(slot);
    return s.item;
  }

  bool limited_ = false;
  PortSharing sharing_ = PortSharing::fair;
  std::size_t waiting_ = 0;
  // fair: the connections' queues, their heads waiting in capacity_ (as flows of the same number)
  emulated::SharedCapacity capacity_{RateLimit{}, emulated::SlowdownSchedule{}, scheduler::Time{0}};
  std::vector<Queue> queues_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;  // the free slots, the last freed on top
  // fifo: one queue, the bucket alone
  emulated::TokenBucket bucket_;
  std::deque<Waiting> fifo_;
  std::deque<Waiting> priority_;  // fifo: the priority lane, served first
};

}  // namespace netio::scheduler::simulation
