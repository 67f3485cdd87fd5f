// SPDX-License-Identifier: MIT
// A token bucket whose rate follows a slow-down schedule. Pure: time is passed in. A buffer
// may go when the bucket holds min(its size, burst) bytes and then takes its whole size (the
// level may go below zero), so buffers larger than the burst pass at the exact long-run rate.
#pragma once

#include "netio/emulated/slowdown_schedule.hpp"

#include <cstddef>

namespace netio::emulated {

class TokenBucket {
 public:
  TokenBucket() = default;  // unlimited
  TokenBucket(RateLimit limit, SlowdownSchedule schedule, Nanos now);

  bool limited() const noexcept { return static_cast<bool>(limit_); }
  // The earliest time ≥ now at which a buffer of `bytes` may go (Nanos::max(): never, the rate
  // being 0 for good).
  Nanos ready_at(Nanos now, std::size_t bytes);
  // Takes `bytes` at `now` (call when ready_at(now, bytes) <= now).
  void consume(Nanos now, std::size_t bytes);
  // A new limit and schedule from `now` on; the level is kept (capped at the new burst).
  void reconfigure(RateLimit limit, SlowdownSchedule schedule, Nanos now);
  double level(Nanos now);  // bytes in the bucket (for tests)

 private:
  void refill(Nanos now);
  RateLimit limit_;
  SlowdownSchedule schedule_;
  double tokens_ = 0;
  Nanos last_{0};
};

}  // namespace netio::emulated
