// SPDX-License-Identifier: MIT
#include "netio/emulated/token_bucket.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace netio::emulated {

TokenBucket::TokenBucket(RateLimit limit, SlowdownSchedule schedule, Nanos now)
    : limit_(limit), schedule_(std::move(schedule)), tokens_(static_cast<double>(limit.burst_bytes)), last_(now) {}

void TokenBucket::reconfigure(RateLimit limit, SlowdownSchedule schedule, Nanos now) {
  if (limited())
    refill(now);
  else
    tokens_ = static_cast<double>(limit.burst_bytes);
  limit_ = limit;
  schedule_ = std::move(schedule);
  tokens_ = std::min(tokens_, static_cast<double>(limit_.burst_bytes));
  last_ = now;
}

void TokenBucket::refill(Nanos now) {
  if (now <= last_) return;
  const double burst = static_cast<double>(limit_.burst_bytes);
  if (tokens_ >= burst) {
    last_ = now;
    return;
  }
  double added = 0;
  Nanos t = last_;
  while (t < now && tokens_ + added < burst) {
    const auto change = schedule_.next_change_after(t);
    const Nanos end = change ? std::min(*change, now) : now;
    added += limit_.bytes_per_second * schedule_.rate_factor(t) * static_cast<double>((end - t).count()) * 1e-9;
    t = end;
  }
  tokens_ = std::min(burst, tokens_ + added);
  last_ = now;
}

Nanos TokenBucket::ready_at(Nanos now, std::size_t bytes) {
  if (!limited()) return now;
  refill(now);
  const double need = std::min(static_cast<double>(bytes), static_cast<double>(limit_.burst_bytes));
  double missing = need - tokens_;
  if (missing <= 0) return now;
  Nanos t = std::max(now, last_);
  for (int segments = 0; segments < 1'000'000; ++segments) {
    const double rate = limit_.bytes_per_second * schedule_.rate_factor(t);
    const auto change = schedule_.next_change_after(t);
    if (rate > 0) {
      const double seconds = missing / rate;
      const Nanos done = t + Nanos(static_cast<Nanos::rep>(std::ceil(seconds * 1e9)));
      if (!change || done <= *change) return done;
    }
    if (!change) return Nanos::max();
    missing -= rate * static_cast<double>((*change - t).count()) * 1e-9;
    t = *change;
  }
  return Nanos::max();
}

void TokenBucket::consume(Nanos now, std::size_t bytes) {
  if (!limited()) return;
  refill(now);
  tokens_ -= static_cast<double>(bytes);
}

double TokenBucket::level(Nanos now) {
  refill(now);
  return tokens_;
}

}  // namespace netio::emulated
