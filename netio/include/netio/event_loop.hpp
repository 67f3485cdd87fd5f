// The event loop: one epoll instance driven by one thread (see netio::Context, which owns
// the thread). It multiplexes file descriptors, timers (one timerfd each) and work posted
// from other threads (an eventfd wake-up plus a queue).
//
// Thread-safety:
//   - post(), run_sync(), stop(), in_loop_thread() may be called from any thread.
//   - add_timer() and cancel_timer() may be called from any thread; off the loop thread
//     they are forwarded with post().
//   - add_fd(), modify_fd() and remove_fd() must be called on the loop thread (or before
//     run() starts). Call remove_fd() before closing the descriptor.
// Callbacks always run on the loop thread. Once run() has returned there is no loop thread:
// post() and run_sync() then run tasks on the caller's thread. A callback may add or remove any handler,
// including its own; a removed handler is never called again, even for events already
// returned by the same epoll_wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace netio {

class EventLoop {
 public:
  using FdCallback = std::function<void(std::uint32_t epoll_events)>;
  using Task = std::function<void()>;
  using TimerId = std::uint64_t;

  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until stop(). Called by exactly one thread, which becomes the loop thread.
  void run();
  // Asks run() to return after the current dispatch. Idempotent, any thread.
  void stop();
  bool in_loop_thread() const noexcept;
  bool running() const noexcept { return running_.load(std::memory_order_acquire); }

  // Busy polling: epoll_wait with a zero timeout, spinning instead of sleeping. Lower and
  // steadier latency, at the price of one core at 100 %. Off by default.
  // While busy-polling, post() sets a flag the loop checks every round instead of writing
  // the wake-up eventfd (a system call saved per post).
  void set_busy_poll(bool enabled) noexcept {
    busy_poll_.store(enabled, std::memory_order_seq_cst);
    if (!enabled) wake();  // a post() that skipped the eventfd must not be slept through
  }
  bool busy_poll() const noexcept { return busy_poll_.load(std::memory_order_relaxed); }

  // A poller runs once per round of the loop: all the time when busy-polling, otherwise
  // after each wake-up. It is for sources with no file descriptor worth sleeping on while
  // the loop spins anyway (libfabric completion queues, read the way fi_pingpong does).
  // While pollers spin, the loop looks at its fds (sockets, timers, connection events)
  // only every 64th round (tens of microseconds apart): each look is an epoll_wait, and
  // looking every 8th round made three of them per libfabric round trip, 8 % of its time.
  // Loop thread only. A poller may remove itself.
  using PollerId = std::uint64_t;
  PollerId add_poller(Task poller);
  void remove_poller(PollerId id) noexcept;

  void add_fd(int fd, std::uint32_t events, FdCallback callback);
  void modify_fd(int fd, std::uint32_t events);
  void remove_fd(int fd);

  // A timer first fires after `delay`, then every `period` (zero period: one-shot).
  TimerId add_timer(std::chrono::nanoseconds delay, std::chrono::nanoseconds period, Task callback);
  void cancel_timer(TimerId id);

  // Runs `task` on the loop thread, in posting order. A task that captures no more than a
  // pointer or two costs no heap allocation. Once run() has returned, post() runs the task
  // at once on the caller's thread: posted work is never dropped.
  void post(Task task);

  // Runs `task` on the loop thread and waits for it. On the loop thread, or when the loop
  // is not running, runs it at once on the caller's thread. Exceptions propagate.
  void run_sync(const Task& task);

 private:
  struct Handler;
  struct Timer;
  void wake();
  void drain_posted(bool read_wake_fd);
  void dispatch(std::uint64_t key, std::uint32_t events);
  void add_timer_now(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period, Task callback);
  void cancel_timer_now(TimerId id);
  void run_pollers();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> busy_poll_{false};
  std::atomic<std::thread::id> loop_thread_{};

  std::uint64_t next_key_ = 1;                           // loop thread only
  std::unordered_map<int, std::uint64_t> fd_keys_;       // fd -> handler key
  std::unordered_map<std::uint64_t, std::shared_ptr<Handler>> handlers_;
  std::unordered_map<TimerId, int> timers_;              // timer id -> timerfd
  std::atomic<TimerId> next_timer_id_{1};

  struct Poller {
    PollerId id;
    std::shared_ptr<Task> task;  // null once removed; shared so a poller can remove itself
  };
  std::vector<Poller> pollers_;  // loop thread only
  PollerId next_poller_id_ = 1;  // loop thread only
  bool pollers_removed_ = false;  // loop thread only

  std::mutex posted_mutex_;
  std::vector<Task> posted_;       // guarded by posted_mutex_
  bool stopped_ = false;           // guarded by posted_mutex_: post() runs tasks inline
  std::vector<Task> running_tasks_;  // loop thread only; swapped with posted_
  std::atomic<bool> wake_pending_{false};
};

}  // namespace netio
