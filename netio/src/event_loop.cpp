// SPDX-License-Identifier: MIT
#include "netio/backend/event_loop.hpp"

#include "current_exception.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <exception>
#include <future>
#include <utility>

namespace netio {
namespace {

constexpr std::uint64_t wake_key = 0;
constexpr std::uint64_t timer_key = 1;       // handler keys start at 2
constexpr std::uint32_t fd_look_every = 64;  // rounds, while pollers spin (see add_poller)

timespec to_timespec(std::chrono::nanoseconds d) {
  const auto count = d.count();
  return {static_cast<time_t>(count / 1'000'000'000), static_cast<long>(count % 1'000'000'000)};
}

// now + delay, saturating instead of overflowing for huge delays.
std::chrono::steady_clock::time_point deadline_after(std::chrono::steady_clock::time_point now,
                                                     std::chrono::nanoseconds delay) {
  using time_point = std::chrono::steady_clock::time_point;
  delay = std::max(delay, std::chrono::nanoseconds::zero());
  return delay >= time_point::max() - now ? time_point::max() : now + delay;
}

}  // namespace

struct EventLoop::Handler {
  int fd;
  FdCallback callback;
  std::uint32_t events = 0;       // what epoll is asked for
  std::uint32_t spin_events = 0;  // what a spinning loop reports without asking epoll
  bool spin_listed = false;       // in spinning_fds_
  bool in_epoll = true;           // false while spinning for input (see spin_fd)
  bool removed = false;
};

EventLoop::EventLoop() {
  const auto fail = [this](const char* what) {
    const int err = errno;
    for (const int fd : {timer_fd_, wake_fd_, epoll_fd_}) {
      if (fd >= 0) ::close(fd);
    }
    throw system_error(err, fmt::format("event loop: {} failed", what));
  };
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) fail("epoll_create1");
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) fail("eventfd");
  // steady_clock is CLOCK_MONOTONIC: deadlines go to the timerfd as they are.
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) fail("timerfd_create");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = wake_key;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) fail("registering the wake-up eventfd");
  ev.data.u64 = timer_key;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &ev) != 0) fail("registering the timerfd");
}

EventLoop::~EventLoop() {
  {
    std::lock_guard lock(posted_mutex_);
    stopped_ = true;
  }
  // Tasks posted but never run (a loop that never ran) still run: they may free memory.
  {
    std::lock_guard serial(without_loop_mutex_);
    drain_posted(true);
  }
  // Pending timers are dropped. Their callbacks are destroyed outside the queue, so a
  // destructor that cancels or adds a timer finds it consistent.
  TimerQueue dropped;
  dropped.swap(timer_queue_);
  timer_index_.clear();
  dropped.clear();
  ::close(timer_fd_);
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

bool EventLoop::in_loop_thread() const noexcept {
  return loop_thread_.load(std::memory_order_acquire) == std::this_thread::get_id();
}

EventLoop::PollerId EventLoop::add_poller(Task poller) {
  const PollerId id = next_poller_id_++;
  pollers_.push_back({id, std::make_shared<Task>(std::move(poller))});
  return id;
}

void EventLoop::remove_poller(PollerId id) noexcept {
  for (auto& poller : pollers_) {
    if (poller.id == id && poller.task) {
      poller.task.reset();
      pollers_removed_ = true;
    }
  }
}

void EventLoop::run_pollers() {
  // By index: a poller may add or remove pollers (the vector may grow meanwhile).
  for (std::size_t i = 0; i < pollers_.size(); ++i) {
    const auto task = pollers_[i].task;
    if (!task) continue;
    try {
      (*task)();
    } catch (...) {
      log(LogLevel::error, "event loop: poller threw: {}", detail::current_exception_text());
    }
  }
  if (std::exchange(pollers_removed_, false)) {
    std::erase_if(pollers_, [](const Poller& poller) { return !poller.task; });
  }
}

void EventLoop::run_spinning_fds() {
  // By index: a callback may add spinning fds (the vector may grow meanwhile).
  for (std::size_t i = 0; i < spinning_fds_.size(); ++i) {
    // spinning_fds_ keeps the callback alive if it removes itself (the vector is pruned
    // below), and a pointer stays valid where the vector may grow meanwhile.
    Handler* const handler = spinning_fds_[i].get();
    const std::uint32_t events = handler->events & handler->spin_events;
    if (handler->removed || events == 0) continue;
    try {
      handler->callback(events);
    } catch (...) {
      log(LogLevel::error, "event loop: handler for fd {} threw: {}", handler->fd, detail::current_exception_text());
    }
  }
  if (std::exchange(spinning_fds_removed_, false)) {
    std::erase_if(spinning_fds_, [](const auto& handler) { return handler->removed; });
  }
}

void EventLoop::run() {
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_release);
  running_.store(true, std::memory_order_release);
  std::array<epoll_event, 64> events{};
  std::uint32_t round = 0;
  while (!stop_requested_.load(std::memory_order_acquire)) {
    const bool busy = busy_poll_.load(std::memory_order_seq_cst);
    if (busy && wake_pending_.load(std::memory_order_seq_cst)) drain_posted(false);
    const bool spinning = !pollers_.empty() || !spinning_fds_.empty();
    bool awake = busy;
    if (!busy && awake_until_ != Clock::time_point::min()) {
      awake = Clock::now() < awake_until_;
      if (!awake) awake_until_ = Clock::time_point::min();
    }
    if (!busy || !spinning || ++round % fd_look_every == 0) {
      const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), awake ? 0 : -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        log(LogLevel::error, "event loop: epoll_wait failed: {}", std::strerror(errno));
        break;
      }
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == wake_key) {
          drain_posted(true);
        } else if (events[i].data.u64 == timer_key) {
          // Nothing to read: re-armed since it expired (by a handler earlier in this batch).
          std::uint64_t expirations = 0;
          if (::read(timer_fd_, &expirations, sizeof expirations) == sizeof expirations) {
            timer_fd_deadline_ = Clock::time_point::max();  // expired, hence disarmed
          }
          run_due_timers(Clock::now());
        } else {
          dispatch(events[i].data.u64, events[i].events);
        }
      }
    }
    // While spinning, epoll may be looked at only every 64th round: due timers must not wait.
    if (busy && !timer_queue_.empty()) {
      if (const auto now = Clock::now(); timer_queue_.begin()->first <= now) run_due_timers(now);
    }
    if (!pollers_.empty()) run_pollers();
    if (busy && !spinning_fds_.empty()) run_spinning_fds();
  }
  // From here on post() runs tasks inline; what was posted before runs now, on this thread,
  // and a post() from another thread meanwhile waits for it (without_loop_mutex_).
  {
    std::lock_guard serial(without_loop_mutex_);
    {
      std::lock_guard lock(posted_mutex_);
      stopped_ = true;
    }
    drain_posted(true);
  }
  running_.store(false, std::memory_order_release);
  loop_thread_.store(std::thread::id(), std::memory_order_release);
}

void EventLoop::stop() {
  stop_requested_.store(true, std::memory_order_release);
  wake();
}

void EventLoop::wake() {
  const std::uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the loop will wake anyway.
  [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof one);
}

void EventLoop::post(Task task) {
  {
    std::unique_lock lock(posted_mutex_);
    if (!stopped_) {
      posted_.push_back(std::move(task));
      lock.unlock();
      if (!wake_pending_.exchange(true, std::memory_order_seq_cst) && !busy_poll_.load(std::memory_order_seq_cst)) {
        wake();
      }
      return;
    }
  }
  // The loop has stopped: nobody else will run it. One at a time, as the loop would.
  std::lock_guard serial(without_loop_mutex_);
  task();
}

void EventLoop::run_sync(const Task& task) {
  if (in_loop_thread()) {
    task();
    return;
  }
  if (!running()) {
    std::lock_guard serial(without_loop_mutex_);
    task();
    return;
  }
  std::promise<void> done;
  auto result = done.get_future();
  // The exception goes to the caller through `failure`, not through the promise: once the
  // handler has ended the loop thread holds no reference to it, so only the caller ever
  // frees it (a promise's set_exception() keeps a copy that the loop thread drops later,
  // which TSan reports against the caller reading it, libstdc++'s counts being invisible).
  std::exception_ptr failure;
  post([&task, &done, &failure] {
    try {
      task();
    } catch (...) {
      failure = std::current_exception();
    }
    done.set_value();
  });
  result.get();
  if (failure) std::rethrow_exception(failure);
}

void EventLoop::drain_posted(bool read_wake_fd) {
  if (read_wake_fd) {
    std::uint64_t counter = 0;
    [[maybe_unused]] const auto got = ::read(wake_fd_, &counter, sizeof counter);
  }
  // Clear the flag before taking the queue: a task posted after the swap wakes us again.
  wake_pending_.store(false, std::memory_order_release);
  {
    std::lock_guard lock(posted_mutex_);
    running_tasks_.swap(posted_);
  }
  for (auto& task : running_tasks_) {
    try {
      task();
    } catch (...) {
      log(LogLevel::error, "event loop: a posted task threw: {}", detail::current_exception_text());
    }
  }
  running_tasks_.clear();
}

void EventLoop::dispatch(std::uint64_t key, std::uint32_t events) {
  const auto it = handlers_.find(key);
  if (it == handlers_.end()) return;  // removed earlier in this batch
  // No reference count per event: a callback that removes its own fd leaves the handler in
  // removed_while_dispatching_ (remove_fd()), freed once it returned.
  Handler* const handler = it->second.get();
  dispatching_ = handler;
  try {
    handler->callback(events);
  } catch (...) {
    log(LogLevel::error, "event loop: handler for fd {} threw: {}", handler->fd, detail::current_exception_text());
  }
  dispatching_ = nullptr;
  removed_while_dispatching_.reset();
}

void EventLoop::add_fd(int fd, std::uint32_t events, FdCallback callback) {
  const std::uint64_t key = next_key_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    throw system_error(errno, fmt::format("event loop: cannot watch fd {}", fd));
  }
  fd_keys_[fd] = key;
  handlers_[key] = std::make_shared<Handler>(Handler{fd, std::move(callback), events});
}

void EventLoop::spin_fd(int fd, std::uint32_t events) {
  if (!busy_poll()) return;
  const auto it = fd_keys_.find(fd);
  if (it == fd_keys_.end()) return;
  const auto& handler = handlers_.at(it->second);
  if (!handler->spin_listed && events != 0) {
    spinning_fds_.push_back(handler);
    handler->spin_listed = true;
  }
  handler->spin_events = events;  // a listed handler spinning for nothing is skipped until removed
  // A socket read every round needs no epoll: its reads find the end and errors themselves.
  // Out of the epoll set it is also off the socket's wait queue, so a peer's send no longer
  // runs epoll's wake-up callback (a lock and a list) on its way in.
  const bool in_epoll = (events & EPOLLIN) == 0;
  if (in_epoll != handler->in_epoll) {
    epoll_event ev{};
    ev.events = handler->events;
    ev.data.u64 = it->second;
    if (::epoll_ctl(epoll_fd_, in_epoll ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev) != 0) {
      throw system_error(errno, fmt::format("event loop: cannot {} fd {} {} epoll", in_epoll ? "return" : "take", fd,
                                            in_epoll ? "to" : "out of"));
    }
    handler->in_epoll = in_epoll;
  }
}

void EventLoop::modify_fd(int fd, std::uint32_t events) {
  const auto it = fd_keys_.find(fd);
  if (it == fd_keys_.end()) return;
  const auto& handler = handlers_.at(it->second);
  if (handler->in_epoll) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = it->second;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
      throw system_error(errno, fmt::format("event loop: cannot change events of fd {}", fd));
    }
  }
  handler->events = events;
}

void EventLoop::remove_fd(int fd) {
  const auto it = fd_keys_.find(fd);
  if (it == fd_keys_.end()) return;
  const auto handler = handlers_.find(it->second);
  if (handler->second->in_epoll) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  if (handler->second->spin_listed) spinning_fds_removed_ = true;
  handler->second->removed = true;
  if (handler->second.get() == dispatching_) removed_while_dispatching_ = std::move(handler->second);
  handlers_.erase(handler);
  fd_keys_.erase(it);
}

EventLoop::TimerId EventLoop::add_timer(std::chrono::nanoseconds delay, std::chrono::nanoseconds period,
                                        Task callback) {
  const TimerId id = next_timer_id_.fetch_add(1, std::memory_order_relaxed);
  if (in_loop_thread() || !running()) {
    add_timer_now(id, delay, period, std::move(callback));
  } else {
    post([this, id, delay, period, callback = std::move(callback)]() mutable {
      add_timer_now(id, delay, period, std::move(callback));
    });
  }
  return id;
}

void EventLoop::cancel_timer(TimerId id) {
  if (in_loop_thread() || !running()) {
    cancel_timer_now(id);
  } else {
    post([this, id] { cancel_timer_now(id); });
  }
}

void EventLoop::add_timer_now(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period,
                              Task callback) {
  const auto deadline = deadline_after(Clock::now(), delay);
  period = std::max(period, std::chrono::nanoseconds::zero());
  const auto it = timer_queue_.emplace(deadline, Timer{id, period, timer_queue_seq_++, std::move(callback)});
  try {
    timer_index_.emplace(id, it);
  } catch (...) {
    timer_queue_.erase(it);
    throw;
  }
  // Only a new earliest deadline needs the timerfd; a batch being run arms it once at its end.
  if (!running_timers_ && deadline < timer_fd_deadline_) arm_timer_fd();
}

void EventLoop::cancel_timer_now(TimerId id) {
  if (id == running_timer_) {  // out of the queue while it runs: run_due_timers() drops it
    running_timer_cancelled_ = true;
    return;
  }
  const auto it = timer_index_.find(id);
  if (it == timer_index_.end()) return;
  const bool was_earliest = it->second == timer_queue_.begin();
  // The callback is destroyed last, with `node`: its destructor may add or cancel timers.
  const auto node = timer_queue_.extract(it->second);
  timer_index_.erase(it);
  if (was_earliest && !running_timers_) arm_timer_fd();
}

void EventLoop::arm_timer_fd() {
  const auto deadline = timer_queue_.empty() ? Clock::time_point::max() : timer_queue_.begin()->first;
  if (deadline == timer_fd_deadline_) return;
  itimerspec spec{};  // a zero it_value disarms
  if (deadline != Clock::time_point::max()) {
    spec.it_value = to_timespec(std::max(deadline.time_since_epoch(), std::chrono::nanoseconds(1)));
  }
  if (::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    throw system_error(errno, "event loop: timerfd_settime failed");
  }
  timer_fd_deadline_ = deadline;
}

void EventLoop::run_due_timers(Clock::time_point now) {
  // Timers queued by the callbacks of this batch (also those due at once) wait for a later
  // round: they are the ones with a `queued` count from here on.
  const std::uint64_t batch = timer_queue_seq_;
  running_timers_ = true;
  while (!timer_queue_.empty()) {
    const auto first = timer_queue_.begin();
    if (first->first > now || first->second.queued >= batch) break;
    // Out of the queue while it runs; the node keeps the callback alive (and is reused if
    // the timer repeats).
    auto node = timer_queue_.extract(first);
    Timer& timer = node.mapped();
    const bool periodic = timer.period.count() > 0;
    if (!periodic) timer_index_.erase(timer.id);
    running_timer_ = timer.id;
    running_timer_cancelled_ = false;
    try {
      timer.callback();
    } catch (...) {
      log(LogLevel::error, "event loop: timer {} threw: {}", timer.id, detail::current_exception_text());
    }
    running_timer_ = 0;
    if (!periodic) continue;
    if (running_timer_cancelled_) {
      timer_index_.erase(timer.id);
      continue;
    }
    // From the previous deadline, not from now: no drift. Missed periods are skipped.
    auto next = node.key() + timer.period;
    if (next <= now) next += ((now - next) / timer.period + 1) * timer.period;
    node.key() = next;
    timer.queued = timer_queue_seq_++;
    const TimerId id = timer.id;
    timer_index_[id] = timer_queue_.insert(std::move(node));
  }
  running_timers_ = false;
  arm_timer_fd();
}

}  // namespace netio
