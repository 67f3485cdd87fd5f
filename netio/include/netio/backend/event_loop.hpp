// SPDX-License-Identifier: MIT
/// @file
/// The event loop: one epoll instance driven by one thread (see netio::Context, which owns
/// the thread). It multiplexes file descriptors, timers (one timerfd per loop, armed for the
/// earliest deadline of a timer queue) and work posted from other threads (an eventfd
/// wake-up plus a queue).
///
/// Thread-safety:
///   - post(), run_sync(), stop(), in_loop_thread() may be called from any thread.
///   - add_timer() and cancel_timer() may be called from any thread; off the loop thread
///     they are forwarded with post().
///   - add_fd(), modify_fd() and remove_fd() must be called on the loop thread (or before
///     run() starts). Call remove_fd() before closing the descriptor.
/// Callbacks always run on the loop thread. Once run() has returned there is no loop thread:
/// post() and run_sync() then run tasks on the caller's thread, one at a time (a task posted
/// by two threads at once waits for the other's to end, as it would on the loop thread), so
/// state that only the loop thread touches is never touched by two threads. A callback may add or remove any handler,
/// including its own; a removed handler is never called again, even for events already
/// returned by the same epoll_wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
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

  /// Runs until stop(). Called by exactly one thread, which becomes the loop thread.
  void run();
  /// Asks run() to return after the current dispatch. Idempotent, any thread.
  void stop();
  bool in_loop_thread() const noexcept;
  bool running() const noexcept { return running_.load(std::memory_order_acquire); }

  /// Busy polling: epoll_wait with a zero timeout, spinning instead of sleeping. Lower and
  /// steadier latency, at the price of one core at 100 %. Off by default.
  /// While busy-polling, post() sets a flag the loop checks every round instead of writing
  /// the wake-up eventfd (a system call saved per post).
  void set_busy_poll(bool enabled) noexcept {
    busy_poll_.store(enabled, std::memory_order_seq_cst);
    if (!enabled) wake();  // a post() that skipped the eventfd must not be slept through
  }
  bool busy_poll() const noexcept { return busy_poll_.load(std::memory_order_relaxed); }

  /// Keeps the loop awake until `deadline` when it does not busy-poll: epoll_wait with a zero
  /// timeout (and the pollers) every round instead of sleeping, so that what comes by then
  /// is handled without the thread being woken (a few microseconds each time). For a
  /// back-end that has just written and expects the answer soon (shm://: a request's reply,
  /// a reply's next request). A later deadline extends an earlier one. Loop thread only.
  void stay_awake_until(std::chrono::steady_clock::time_point deadline) noexcept {
    if (deadline > awake_until_) awake_until_ = deadline;
  }

  /// A poller runs once per round of the loop: all the time when busy-polling, otherwise
  /// after each wake-up. It is for sources with no file descriptor worth sleeping on while
  /// the loop spins anyway (libfabric completion queues, read the way fi_pingpong does).
  /// While pollers spin, the loop looks at its fds (sockets, connection events) only every
  /// 64th round (tens of microseconds apart): each look is an epoll_wait, which costs a round
  /// trip dearly when done often. Due timers are
  /// checked every round while busy-polling (a clock read, no system call).
  /// Loop thread only. A poller may remove itself.
  using PollerId = std::uint64_t;
  PollerId add_poller(Task poller);
  void remove_poller(PollerId id) noexcept;

  void add_fd(int fd, std::uint32_t events, FdCallback callback);
  /// While busy-polling, reports `events` (EPOLLIN, EPOLLOUT) of a registered fd every round
  /// without asking epoll, whenever the fd is registered for them: the loop then reads a
  /// socket the way a raw busy-polling program calls recv(), instead of an epoll_wait per
  /// message, and looks at epoll every 64th round as with pollers. The callback must
  /// therefore take a reported event that finds nothing to do (EAGAIN). With EPOLLIN the fd
  /// leaves the epoll set altogether (so a peer's send skips epoll's wake-up), and EPOLLHUP
  /// and EPOLLERR are never reported: the callback's reads must find the end and errors.
  /// Lasts until the fd is removed; zero events stops it. A no-op when not busy-polling.
  /// Loop thread only.
  void spin_fd(int fd, std::uint32_t events);
  void modify_fd(int fd, std::uint32_t events);
  void remove_fd(int fd);

  /// A timer first fires `delay` after add_timer() (a negative delay counts as zero), then
  /// every `period` after its previous deadline, so periods do not drift (zero period:
  /// one-shot). Periods missed while the loop was busy elsewhere are skipped, not replayed in
  /// a burst. Due timers run in deadline order, ties in the order they were added; a timer
  /// added by a timer callback runs in a later round even if already due. Pending timers
  /// are dropped (their callbacks destroyed, never called) with the loop.
  /// Cost: O(log n) in the number of pending timers and two node allocations (queue and
  /// index); no system call unless the timer becomes the earliest (then one timerfd_settime).
  TimerId add_timer(std::chrono::nanoseconds delay, std::chrono::nanoseconds period, Task callback);
  /// A cancelled timer never fires again, even if it is due in the batch being run; a timer
  /// may cancel itself. Unknown or already-finished ids are ignored. Off the loop thread the
  /// cancel takes effect when the loop runs it: the timer may fire meanwhile. O(1) on average
  /// (plus a post off the loop thread); one timerfd_settime if it was the earliest.
  void cancel_timer(TimerId id);

  /// Runs `task` on the loop thread, in posting order. A task that captures no more than a
  /// pointer or two costs no heap allocation. Once run() has returned, post() runs the task
  /// at once on the caller's thread, serialised with every other task run that way (and with
  /// the last tasks the loop runs as it stops): posted work is never dropped and never runs
  /// concurrently with other posted work. Its exception then propagates out of post().
  void post(Task task);

  /// Runs `task` on the loop thread and waits for it. On the loop thread, or when the loop
  /// is not running, runs it at once on the caller's thread (serialised as post() does).
  /// Exceptions propagate.
  void run_sync(const Task& task);

 private:
  struct Handler;
  struct Timer {
    TimerId id;
    std::chrono::nanoseconds period;  ///< zero: one-shot
    std::uint64_t queued;             ///< when it was (re)queued, in timer_queue_seq_ counts
    Task callback;
  };
  using Clock = std::chrono::steady_clock;  ///< CLOCK_MONOTONIC, the timerfd's clock
  /// Keyed by deadline; equal keys keep insertion order, which orders ties.
  using TimerQueue = std::multimap<Clock::time_point, Timer>;
  void wake();
  void drain_posted(bool read_wake_fd);
  void dispatch(std::uint64_t key, std::uint32_t events);
  void add_timer_now(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period, Task callback);
  void cancel_timer_now(TimerId id);
  void run_due_timers(std::chrono::steady_clock::time_point now);
  void arm_timer_fd();
  void run_pollers();
  void run_spinning_fds();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int timer_fd_ = -1;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> busy_poll_{false};
  std::atomic<std::thread::id> loop_thread_{};

  std::uint64_t next_key_ = 2;                      ///< loop thread only
  std::unordered_map<int, std::uint64_t> fd_keys_;  ///< fd -> handler key
  std::unordered_map<std::uint64_t, std::shared_ptr<Handler>> handlers_;
  /// The handler whose callback dispatch() is running, and that handler once it removed
  /// itself there: kept until its callback returns (loop thread only).
  Handler* dispatching_ = nullptr;
  std::shared_ptr<Handler> removed_while_dispatching_;
  std::atomic<TimerId> next_timer_id_{1};

  /// Timers: loop thread only (or any one thread before run() starts / after it returned).
  TimerQueue timer_queue_;
  std::unordered_map<TimerId, TimerQueue::iterator> timer_index_;   ///< pending timers by id
  Clock::time_point timer_fd_deadline_ = Clock::time_point::max();  ///< max: disarmed
  Clock::time_point awake_until_ = Clock::time_point::min();        ///< loop thread; see stay_awake_until()
  std::uint64_t timer_queue_seq_ = 0;                               ///< counts (re)queued timers
  bool running_timers_ = false;                                     ///< in run_due_timers(): arm once, at its end
  TimerId running_timer_ = 0;                                       ///< the timer whose callback is running, 0 if none
  bool running_timer_cancelled_ = false;

  struct Poller {
    PollerId id;
    std::shared_ptr<Task> task;  ///< null once removed; shared so a poller can remove itself
  };
  std::vector<Poller> pollers_;                         ///< loop thread only
  PollerId next_poller_id_ = 1;                         ///< loop thread only
  bool pollers_removed_ = false;                        ///< loop thread only
  std::vector<std::shared_ptr<Handler>> spinning_fds_;  ///< loop thread only; see spin_fd()
  bool spinning_fds_removed_ = false;                   ///< loop thread only

  std::mutex posted_mutex_;
  std::vector<Task> posted_;         ///< guarded by posted_mutex_
  bool stopped_ = false;             ///< guarded by posted_mutex_: post() runs tasks inline
  std::vector<Task> running_tasks_;  ///< loop thread only; swapped with posted_
  /// Held while tasks run without a loop thread (post() and run_sync() once it stopped, the
  /// last drains): they run one at a time. Recursive: such a task may post or run_sync().
  std::recursive_mutex without_loop_mutex_;
  std::atomic<bool> wake_pending_{false};
};

}  // namespace netio
