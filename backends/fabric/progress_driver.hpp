// SPDX-License-Identifier: MIT
// Drives one connection's libfabric queues from the event loop.
//
// Each queue (EQ or CQ) is watched through its wait fd (FI_WAIT_FD + fi_control
// FI_GETWAIT) in the loop's epoll set. On every wake-up the owner's drain function reads
// the queues; since providers such as tcp only make progress when their queues are read
// (manual progress), the driver then asks fi_trywait whether it is safe to sleep, and
// drains again while it says -FI_EAGAIN (a few rounds, then it re-posts itself so other
// connections get their turn). Queues without a wait fd are polled from a periodic timer
// instead (see Domain); that costs up to `poll_period` of latency. When the loop busy-polls,
// queues have no wait objects: completion queues are read on every round of the loop (a
// poller), event queues on every `events_every`-th (events_due).
//
// kick() asks for a drain from any thread (it posts to the loop at most once at a time,
// without allocating): used after posting operations, to hand back receive buffers, and
// to report results outside the call that caused them. The driver keeps itself alive while
// a kick is pending; after stop() it never calls the drain function again.
#pragma once

#include "netio/backend/event_loop.hpp"

#include <rdma/fabric.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace netio::fabric {

class ProgressDriver : public std::enable_shared_from_this<ProgressDriver> {
 public:
  static constexpr std::chrono::milliseconds poll_period{1};
  static constexpr int trywait_rounds = 4;
  static constexpr std::uint32_t events_every = 64;  // rounds of a spinning loop (events_due)

  // `name` appears in log messages; `drain` runs on the loop thread only.
  static std::shared_ptr<ProgressDriver> create(EventLoop& loop, fid_fabric* fabric, std::string name,
                                                std::function<void()> drain);
  ~ProgressDriver();
  ProgressDriver(const ProgressDriver&) = delete;
  ProgressDriver& operator=(const ProgressDriver&) = delete;

  // Watches an EQ or CQ. Loop thread. Falls back to polling (with a warning) when the
  // queue has no wait fd or the fd cannot join the loop.
  void watch(fid* queue, bool has_wait_fd);
  // A drain soon, from the loop. Any thread; idempotent while one is pending.
  void kick() noexcept;
  // A drain after `delay` (retries after -FI_EAGAIN with nothing in flight). Loop thread.
  void kick_after(std::chrono::nanoseconds delay);
  // The queues' fds leave the loop and polling stops, but kicks still drain: for an owner
  // that closed its queues yet has results left to report. Loop thread. Idempotent.
  void unwatch() noexcept;
  // No drain after this returns; fds leave the loop. Loop thread. Idempotent.
  void stop() noexcept;

  void rename(std::string name) { name_ = std::move(name); }  // loop thread

  // Whether this drain should read the event queue (connection events). Always, unless the
  // loop spins: then on every `events_every`-th round only. The tcp provider (1.17) pays an
  // epoll_wait and a mutex for every EQ read: 3 epoll_wait calls per round trip of a spinning
  // ping-pong; connection events can wait some microseconds. Loop thread.
  bool events_due() const noexcept { return poller_ == 0 || spin_rounds_ % events_every == 0; }

 private:
  ProgressDriver(EventLoop& loop, fid_fabric* fabric, std::string name, std::function<void()> drain);
  void run();
  void settle();
  void start_spinning();
  void start_polling(const std::string& why);
  void on_kick() noexcept;

  EventLoop& loop_;
  fid_fabric* fabric_;
  std::string name_;
  std::function<void()> drain_;
  std::vector<fid*> waitable_;  // queues whose fds are in the loop: fi_trywait covers them
  std::vector<int> fds_;
  bool polling_ = false;
  EventLoop::TimerId poll_timer_ = 0;
  EventLoop::PollerId poller_ = 0;  // busy-polling loop: queues read on every round
  std::uint32_t spin_rounds_ = 0;
  EventLoop::TimerId retry_timer_ = 0;
  // For the debug log when the driver stops: how hard the loop worked for this connection.
  std::uint64_t wakeups_ = 0;
  std::uint64_t trywait_retries_ = 0;
  std::uint64_t requeues_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> spinning_{false};  // a poller drains every round: kicks are redundant

  std::mutex kick_mutex_;
  bool kick_pending_ = false;                        // guarded by kick_mutex_
  std::shared_ptr<ProgressDriver> kick_keep_alive_;  // guarded by kick_mutex_
};

}  // namespace netio::fabric
