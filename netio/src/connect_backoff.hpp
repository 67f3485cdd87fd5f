// SPDX-License-Identifier: MIT
// When a send socket tries to connect again after a failed attempt, and when it gives up:
// the retry schedule of a connection that was never up (a receiver or publisher started
// after its sender). Delays start at `first_delay` and double up to `max_delay`, each drawn
// with ±25 % jitter (so that many senders refused by one restarting receiver do not all come
// back at the same instant); the attempts end at the deadline `timeout` after the first one
// (0: never). Which failed attempts are worth a log line: the first, then whenever the
// number of attempts reaches a power of two, i.e. at most once per back-off step and, once
// the delay is capped, ever more rarely.
// Pure logic on an injected clock value: no timers, no I/O. Not thread-safe (the owner's
// loop thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace netio::detail {

class ConnectBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::nanoseconds default_first_delay = std::chrono::milliseconds(10);
  static constexpr std::chrono::nanoseconds default_max_delay = std::chrono::seconds(1);

  // `timeout` 0: retry for ever. `seed` varies the jitter between sockets.
  ConnectBackoff(Clock::time_point started, std::chrono::nanoseconds timeout, std::uint64_t seed,
                 std::chrono::nanoseconds first_delay = default_first_delay,
                 std::chrono::nanoseconds max_delay = default_max_delay) noexcept;

  // An attempt failed at `now`: the delay before the next one, or nothing when the deadline
  // leaves no room for it (the socket gives up). Counts the attempt.
  std::optional<std::chrono::nanoseconds> next_delay(Clock::time_point now) noexcept;
  // Whether the attempt just counted by next_delay() deserves a log line.
  bool worth_logging() const noexcept { return attempts_ != 0 && (attempts_ & (attempts_ - 1)) == 0; }
  std::uint64_t attempts() const noexcept { return attempts_; }
  // The time left until the deadline (nothing when there is none).
  std::optional<std::chrono::nanoseconds> remaining(Clock::time_point now) const noexcept;

 private:
  std::chrono::nanoseconds jittered(std::chrono::nanoseconds delay) noexcept;

  Clock::time_point started_;
  std::chrono::nanoseconds timeout_;
  std::chrono::nanoseconds step_;
  std::chrono::nanoseconds max_delay_;
  std::uint64_t attempts_ = 0;
  std::uint64_t random_;
};

}  // namespace netio::detail
