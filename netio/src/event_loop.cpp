#include "netio/event_loop.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <future>
#include <utility>

namespace netio {
namespace {

constexpr std::uint64_t wake_key = 0;  // handler keys start at 1
constexpr std::uint32_t fd_look_every = 64;  // rounds, while pollers spin (see add_poller)

timespec to_timespec(std::chrono::nanoseconds d) {
  const auto count = d.count();
  return {static_cast<time_t>(count / 1'000'000'000), static_cast<long>(count % 1'000'000'000)};
}

}  // namespace

struct EventLoop::Handler {
  int fd;
  FdCallback callback;
};

EventLoop::EventLoop() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw system_error(errno, "event loop: epoll_create1 failed");
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    ::close(epoll_fd_);
    throw system_error(errno, "event loop: eventfd failed");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = wake_key;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    const int err = errno;
    ::close(wake_fd_);
    ::close(epoll_fd_);
    throw system_error(err, "event loop: registering the wake-up eventfd failed");
  }
}

EventLoop::~EventLoop() {
  {
    std::lock_guard lock(posted_mutex_);
    stopped_ = true;
  }
  // Tasks posted but never run (a loop that never ran) still run: they may free memory.
  drain_posted(true);
  for (const auto& [id, fd] : timers_) ::close(fd);
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
    } catch (const std::exception& e) {
      log(LogLevel::error, "event loop: poller threw: {}", e.what());
    }
  }
  if (std::exchange(pollers_removed_, false)) {
    std::erase_if(pollers_, [](const Poller& poller) { return !poller.task; });
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
    if (!busy || pollers_.empty() || ++round % fd_look_every == 0) {
      const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), busy ? 0 : -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        log(LogLevel::error, "event loop: epoll_wait failed: {}", std::strerror(errno));
        break;
      }
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == wake_key) {
          drain_posted(true);
        } else {
          dispatch(events[i].data.u64, events[i].events);
        }
      }
    }
    if (!pollers_.empty()) run_pollers();
  }
  // From here on post() runs tasks inline; what was posted before runs now, on this thread.
  {
    std::lock_guard lock(posted_mutex_);
    stopped_ = true;
  }
  drain_posted(true);
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
  task();  // the loop has stopped: nobody else will run it
}

void EventLoop::run_sync(const Task& task) {
  if (in_loop_thread() || !running()) {
    task();
    return;
  }
  std::promise<void> done;
  auto result = done.get_future();
  post([&task, &done] {
    try {
      task();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  result.get();
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
    } catch (const std::exception& e) {
      log(LogLevel::error, "event loop: a posted task threw: {}", e.what());
    }
  }
  running_tasks_.clear();
}

void EventLoop::dispatch(std::uint64_t key, std::uint32_t events) {
  const auto it = handlers_.find(key);
  if (it == handlers_.end()) return;  // removed earlier in this batch
  const auto handler = it->second;    // keeps the callback alive if it removes itself
  try {
    handler->callback(events);
  } catch (const std::exception& e) {
    log(LogLevel::error, "event loop: handler for fd {} threw: {}", handler->fd, e.what());
  }
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
  handlers_[key] = std::make_shared<Handler>(Handler{fd, std::move(callback)});
}

void EventLoop::modify_fd(int fd, std::uint32_t events) {
  const auto it = fd_keys_.find(fd);
  if (it == fd_keys_.end()) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = it->second;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
    throw system_error(errno, fmt::format("event loop: cannot change events of fd {}", fd));
  }
}

void EventLoop::remove_fd(int fd) {
  const auto it = fd_keys_.find(fd);
  if (it == fd_keys_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  handlers_.erase(it->second);
  fd_keys_.erase(it);
}

EventLoop::TimerId EventLoop::add_timer(std::chrono::nanoseconds delay, std::chrono::nanoseconds period, Task callback) {
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
  const int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) throw system_error(errno, "event loop: timerfd_create failed");
  itimerspec spec{};
  // A zero it_value would disarm the timer: the earliest expiry is 1 ns from now.
  spec.it_value = to_timespec(std::max(delay, std::chrono::nanoseconds(1)));
  spec.it_interval = to_timespec(period);
  if (::timerfd_settime(fd, 0, &spec, nullptr) != 0) {
    const int err = errno;
    ::close(fd);
    throw system_error(err, "event loop: timerfd_settime failed");
  }
  const bool periodic = period.count() > 0;
  timers_[id] = fd;
  add_fd(fd, EPOLLIN, [this, fd, id, periodic, callback = std::move(callback)](std::uint32_t) {
    std::uint64_t expirations = 0;
    if (::read(fd, &expirations, sizeof expirations) != sizeof expirations) return;
    if (!periodic) cancel_timer_now(id);  // before the call: the callback may add timers
    callback();
  });
}

void EventLoop::cancel_timer_now(TimerId id) {
  const auto it = timers_.find(id);
  if (it == timers_.end()) return;
  remove_fd(it->second);
  ::close(it->second);
  timers_.erase(it);
}

}  // namespace netio
