// SPDX-License-Identifier: MIT
// The switch core of an emulated network (core= in a spec): one capacity shared by every
// emulated node of the process whose spec has the same core= clause. Every buffer a node
// sends (its send sockets' buffers and its replies) crosses it after the node's out=, so
// the network congests before the ports do when the nodes' out= add up to more than core=,
// as a switch with less capacity than the sum of its ports (an oversubscribed fabric).
//
// A token bucket (TokenBucket, burst included) and fair queueing between the connections
// with a buffer waiting (SharedCapacity), released on a thread of its own (the switch),
// which hands each buffer back to its connection through the callback given with it: the
// connection posts it to its own event loop. Nodes in other processes (role runs) do not
// share it: each process has its own core.
//
// Thread-safe. Lifetime: shared() keeps one per clause while a connection holds it; the
// destructor stops the thread (waiting buffers are dropped: their connections are gone).
#pragma once

#include "netio/emulated/shared_capacity.hpp"

#include "netio/emulation.hpp"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace netio::emulated {

class CoreSwitch {
 public:
  using FlowId = SharedCapacity::FlowId;

  // The process's core for `limit` (one per rate and burst), made on first use.
  static std::shared_ptr<CoreSwitch> shared(const RateLimit& limit);

  explicit CoreSwitch(RateLimit limit);
  ~CoreSwitch();
  CoreSwitch(const CoreSwitch&) = delete;
  CoreSwitch& operator=(const CoreSwitch&) = delete;

  // A connection's number here (dense: a removed one's number comes back).
  FlowId open();
  // The flow's next buffer (`bytes`) waits; at most one per flow. `release` runs on the
  // switch's thread when it may go, under the switch's lock: it must only hand the buffer
  // back (post to a loop), never call into the switch.
  void enqueue(FlowId flow, std::size_t bytes, std::function<void()> release);
  // The flow leaves: its waiting buffer's release does not run once this returns, and its
  // number may be given to another.
  void remove(FlowId flow) noexcept;

  std::uint64_t buffers_released() const noexcept;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  SharedCapacity capacity_;                                    // guarded by mutex_
  std::unordered_map<FlowId, std::function<void()>> waiting_;  // guarded by mutex_
  FlowId next_flow_ = 0;                                       // guarded by mutex_
  std::vector<FlowId> free_flows_;                             // guarded by mutex_
  std::uint64_t released_ = 0;                                 // guarded by mutex_
  std::thread thread_;                                         // last: starts once the rest is built
};

}  // namespace netio::emulated
