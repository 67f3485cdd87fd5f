// SPDX-License-Identifier: MIT
#include "backends/fabric/progress_driver.hpp"

#include "backends/fabric/fabric_errors.hpp"
#include "netio/log.hpp"

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <sys/epoll.h>

namespace netio::fabric {

std::shared_ptr<ProgressDriver> ProgressDriver::create(EventLoop& loop, fid_fabric* fabric, std::string name,
                                                       std::function<void()> drain) {
  return std::shared_ptr<ProgressDriver>(new ProgressDriver(loop, fabric, std::move(name), std::move(drain)));
}

ProgressDriver::ProgressDriver(EventLoop& loop, fid_fabric* fabric, std::string name, std::function<void()> drain)
    : loop_(loop), fabric_(fabric), name_(std::move(name)), drain_(std::move(drain)) {}

ProgressDriver::~ProgressDriver() { stop(); }

void ProgressDriver::watch(fid* queue, bool has_wait_fd) {
  if (!has_wait_fd && loop_.busy_poll()) {
    start_spinning();
    return;
  }
  if (!has_wait_fd) {
    start_polling("its queue was opened without a wait object");
    return;
  }
  int fd = -1;
  if (const int rc = ::fi_control(queue, FI_GETWAIT, &fd); rc != 0 || fd < 0) {
    start_polling(fmt::format("fi_control(FI_GETWAIT) gave no fd: {}", fi_error_text(rc)));
    return;
  }
  try {
    // Providers may mark the fd readable, writable or in error: any of them means "look".
    loop_.add_fd(fd, EPOLLIN, [this](std::uint32_t) { run(); });
  } catch (const Error& e) {
    start_polling(fmt::format("its wait fd {} cannot join the event loop: {}", fd, e.what()));
    return;
  }
  fds_.push_back(fd);
  waitable_.push_back(queue);
}

void ProgressDriver::start_spinning() {
  if (polling_) return;
  polling_ = true;
  // The loop never sleeps: reading the queues on every round is what fi_pingpong does, and
  // spares the provider signalling a wait fd and the loop reading it.
  poller_ = loop_.add_poller([this] {
    ++spin_rounds_;
    run();
  });
  spinning_.store(true, std::memory_order_release);
}

void ProgressDriver::start_polling(const std::string& why) {
  if (polling_) return;
  polling_ = true;
  // Once per process at warning level: a provider without wait fds would say it per socket.
  static std::atomic<bool> warned{false};
  log(warned.exchange(true) ? LogLevel::debug : LogLevel::warn,
      "{}: cannot sleep on libfabric wait fds ({}); polling every {} ms instead", name_, why, poll_period.count());
  poll_timer_ = loop_.add_timer(poll_period, poll_period, [this] { run(); });
}

void ProgressDriver::kick() noexcept {
  if (stopped_.load(std::memory_order_acquire) || spinning_.load(std::memory_order_acquire)) return;
  {
    std::lock_guard lock(kick_mutex_);
    if (kick_pending_) return;
    kick_pending_ = true;
    kick_keep_alive_ = shared_from_this();
  }
  // Outside the lock: once the loop has stopped, post() runs the task right here.
  try {
    loop_.post([this] { on_kick(); });
  } catch (...) {
    std::lock_guard lock(kick_mutex_);
    kick_pending_ = false;
    kick_keep_alive_.reset();  // `this` stays alive: the caller holds a reference
  }
}

void ProgressDriver::on_kick() noexcept {
  std::shared_ptr<ProgressDriver> self;
  {
    std::lock_guard lock(kick_mutex_);
    self = std::move(kick_keep_alive_);
    kick_pending_ = false;
  }
  // Off the loop thread means the loop has stopped (post ran us inline, or the loop's
  // destructor drains its queue): nothing may touch the provider from here.
  if (!loop_.in_loop_thread()) return;
  try {
    run();
  } catch (const std::exception& e) {
    log(LogLevel::error, "{}: draining queues failed: {}", name_, e.what());
  }
}

void ProgressDriver::kick_after(std::chrono::nanoseconds delay) {
  if (stopped_.load(std::memory_order_relaxed) || retry_timer_ != 0) return;
  retry_timer_ = loop_.add_timer(delay, std::chrono::nanoseconds::zero(), [this] {
    retry_timer_ = 0;
    run();
  });
}

void ProgressDriver::unwatch() noexcept {
  for (const int fd : fds_) loop_.remove_fd(fd);
  fds_.clear();
  waitable_.clear();
  if (poll_timer_ != 0) loop_.cancel_timer(std::exchange(poll_timer_, 0));
  if (poller_ != 0) loop_.remove_poller(std::exchange(poller_, 0));
  spinning_.store(false, std::memory_order_release);
}

void ProgressDriver::stop() noexcept {
  if (stopped_.exchange(true, std::memory_order_acq_rel)) return;
  log(LogLevel::debug, "{}: progress stopped after {} wake-ups ({} trywait retries, {} re-queued)", name_, wakeups_,
      trywait_retries_, requeues_);
  unwatch();
  if (retry_timer_ != 0) loop_.cancel_timer(std::exchange(retry_timer_, 0));
}

void ProgressDriver::run() {
  if (stopped_.load(std::memory_order_relaxed)) return;
  ++wakeups_;
  drain_();
  settle();
}

void ProgressDriver::settle() {
  if (polling_ || waitable_.empty()) return;
  for (int round = 0; round < trywait_rounds; ++round) {
    if (stopped_.load(std::memory_order_relaxed)) return;
    const int rc = ::fi_trywait(fabric_, waitable_.data(), static_cast<int>(waitable_.size()));
    if (rc == FI_SUCCESS) return;
    if (rc != -FI_EAGAIN) {
      start_polling(fmt::format("fi_trywait failed: {}", fi_error_text(rc)));
      return;
    }
    ++trywait_retries_;
    drain_();
  }
  // Still busy: go round the loop once so that other connections are served, then drain on.
  ++requeues_;
  kick();
}

}  // namespace netio::fabric
