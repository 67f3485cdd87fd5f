// SPDX-License-Identifier: MIT
#include "connect_backoff.hpp"

#include <algorithm>

namespace netio::detail {

ConnectBackoff::ConnectBackoff(Clock::time_point started, std::chrono::nanoseconds timeout, std::uint64_t seed,
                               std::chrono::nanoseconds first_delay, std::chrono::nanoseconds max_delay) noexcept
    : started_(started),
      timeout_(std::max(timeout, std::chrono::nanoseconds::zero())),
      step_(std::max(first_delay, std::chrono::nanoseconds(1))),
      max_delay_(std::max(max_delay, step_)),
      random_(seed | 1) {}

std::optional<std::chrono::nanoseconds> ConnectBackoff::remaining(Clock::time_point now) const noexcept {
  if (timeout_ == std::chrono::nanoseconds::zero()) return std::nullopt;
  return std::max(started_ + timeout_ - now, Clock::duration::zero());
}

std::optional<std::chrono::nanoseconds> ConnectBackoff::next_delay(Clock::time_point now) noexcept {
  ++attempts_;
  auto delay = jittered(step_);
  step_ = std::min(step_ * 2, max_delay_);
  if (const auto left = remaining(now)) {
    if (*left == std::chrono::nanoseconds::zero()) return std::nullopt;
    delay = std::min(delay, *left);  // one last attempt at the deadline
  }
  return delay;
}

std::chrono::nanoseconds ConnectBackoff::jittered(std::chrono::nanoseconds delay) noexcept {
  // xorshift64: enough to spread senders apart, no shared state.
  random_ ^= random_ << 13;
  random_ ^= random_ >> 7;
  random_ ^= random_ << 17;
  // A factor in [0.75, 1.25), in 1/1024 steps.
  const auto factor = 768 + static_cast<std::int64_t>(random_ % 512);
  return std::chrono::nanoseconds(delay.count() / 1024 * factor);
}

}  // namespace netio::detail
