// SPDX-License-Identifier: MIT
// One encoding and one rate limit for the lines a listener writes about connections it
// rejects or drops before they are admitted:
//   "listen socket LOCAL: rejecting PEER: REASON"
// at `warn`, at most `burst` lines per `period`; the rest are counted and the next line that
// is written says how many were left out. A hostile peer that reconnects without end thus
// costs a few lines a second, and every rejection of a well-behaved one is seen.
// RejectionLog is not thread-safe: one per listener, used on its loop thread. The same limit
// (LineBudget) holds the receive sockets' lines about connections dropped after admission
// (DroppedConnectionLog, one for the process).
#pragma once

#include "netio/log.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

namespace netio {

// At most `burst` lines per `period`: admit() says whether a line may be written now and,
// if so, how many were left out before it. Not thread-safe.
class LineBudget {
 public:
  using Clock = std::chrono::steady_clock;
  LineBudget(Clock::duration period, std::uint32_t burst) noexcept : period_(period), burst_(burst) {}

  /// nullopt: leave this line out (counted); otherwise the lines left out since the last one.
  std::optional<std::uint64_t> admit(Clock::time_point now) noexcept {
    if (now - window_start_ >= period_) {
      window_start_ = now;
      written_ = 0;
    }
    if (written_ >= burst_) {
      ++left_out_;
      return std::nullopt;
    }
    ++written_;
    return std::exchange(left_out_, 0);
  }
  std::uint64_t left_out() const noexcept { return left_out_; }

 private:
  Clock::duration period_;
  std::uint32_t burst_;
  Clock::time_point window_start_{};
  std::uint32_t written_ = 0;
  std::uint64_t left_out_ = 0;
};

class RejectionLog {
 public:
  using Clock = LineBudget::Clock;
  explicit RejectionLog(Clock::duration period = std::chrono::seconds(1), std::uint32_t burst = 10) noexcept
      : budget_(period, burst) {}

  void reject(std::string_view local, std::string_view peer, std::string_view reason,
              Clock::time_point now = Clock::now()) {
    const auto left_out = budget_.admit(now);
    if (!left_out) return;
    if (*left_out > 0) {
      log(LogLevel::warn, "listen socket {}: rejecting {}: {} ({} more rejection(s) not logged before this one)", local,
          peer, reason, *left_out);
    } else {
      log(LogLevel::warn, "listen socket {}: rejecting {}: {}", local, peer, reason);
    }
  }
  std::uint64_t left_out() const noexcept { return budget_.left_out(); }

 private:
  LineBudget budget_;
};

// The lines the receive sockets of every back-end write when they drop a connection for what
// its peer sent ("receive socket: WHY; disconnecting"), limited as RejectionLog's but for the
// whole process: a hostile peer that reconnects and misbehaves at once, thousands of times a
// second, costs a few lines a second, not one per connection. Thread-safe.
class DroppedConnectionLog {
 public:
  using Clock = LineBudget::Clock;
  explicit DroppedConnectionLog(Clock::duration period = std::chrono::seconds(1), std::uint32_t burst = 10) noexcept
      : budget_(period, burst) {}

  /// The process's own, which the back-ends write to.
  static DroppedConnectionLog& instance() {
    static DroppedConnectionLog log;
    return log;
  }

  void dropped(std::string_view why, Clock::time_point now = Clock::now()) {
    std::optional<std::uint64_t> left_out;
    {
      std::lock_guard lock(mutex_);
      left_out = budget_.admit(now);
    }
    if (!left_out) return;
    if (*left_out > 0) {
      log(LogLevel::warn,
          "receive socket: {}; disconnecting ({} more connection(s) dropped and not logged before this one)", why,
          *left_out);
    } else {
      log(LogLevel::warn, "receive socket: {}; disconnecting", why);
    }
  }

 private:
  std::mutex mutex_;
  LineBudget budget_;  // guarded by mutex_
};

}  // namespace netio
