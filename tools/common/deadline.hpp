// SPDX-License-Identifier: MIT
// --timeout: a deadline the tools' loops check, and a watchdog that ends the process if
// they cannot (a call stuck in the library), so that no run outlives its bound by more
// than a grace period.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace netio::tools {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // A zero or negative duration means no deadline.
  explicit Deadline(std::chrono::nanoseconds duration)
      : unlimited_(duration <= std::chrono::nanoseconds::zero()),
        at_(Clock::now() + (unlimited_ ? Clock::duration{} : duration)) {}

  bool unlimited() const noexcept { return unlimited_; }
  bool expired() const noexcept { return !unlimited_ && Clock::now() >= at_; }
  // The time left, capped at `cap` (the whole of `cap` when unlimited); never negative.
  std::chrono::nanoseconds remaining(std::chrono::nanoseconds cap) const noexcept {
    if (unlimited_) return cap;
    return std::clamp<std::chrono::nanoseconds>(at_ - Clock::now(), std::chrono::nanoseconds::zero(), cap);
  }

 private:
  bool unlimited_;
  Clock::time_point at_;
};

// How long to wait for a connection that gives up by itself after `connect_timeout`
// (--connect-timeout; 0: never): a little longer, so that its own error, naming the peer and
// the attempts, is what is seen.
inline std::chrono::nanoseconds connect_wait(std::chrono::nanoseconds connect_timeout) {
  if (connect_timeout <= std::chrono::nanoseconds::zero()) return std::chrono::hours(24 * 365);
  return connect_timeout + std::chrono::seconds(5);
}

// Prints "<tool>: still running <grace> after --timeout <d>; giving up" and ends the process
// with exit code 124 (as timeout(1) does) unless destroyed first. Does nothing when the
// duration is zero.
class Watchdog {
 public:
  Watchdog(std::string tool, std::chrono::nanoseconds timeout,
           std::chrono::nanoseconds grace = std::chrono::seconds(5));
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable disarmed_cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

}  // namespace netio::tools
