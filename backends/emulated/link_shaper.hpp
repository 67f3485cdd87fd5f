// SPDX-License-Identifier: MIT
// What one connection's sending side adds: a drawn delay per buffer (order kept: a buffer is
// never due before the one sent before it), the extra delay of slow-down windows, and the
// per-connection rate. Pure: time is passed in.
#pragma once

#include "netio/emulated/delay_sampler.hpp"
#include "netio/emulated/slowdown_schedule.hpp"
#include "netio/emulated/token_bucket.hpp"

#include <cstddef>

namespace netio::emulated {

class LinkShaper {
 public:
  // `stream`: the connection's number in its node (its own PRNG stream).
  LinkShaper(const EmulationConfig& config, std::vector<SlowdownWindow> windows, Nanos origin, std::uint64_t stream,
             Nanos now);

  // A buffer handed over at `now`: when it is due (now + draw + slow-down delay, and not
  // before the previous buffer's due time).
  Nanos admit(Nanos now);
  // When a buffer due at `due` may go, given the connection's rate.
  Nanos eligible_at(Nanos now, Nanos due, std::size_t bytes);
  // The buffer went at `now`.
  void released(Nanos now, std::size_t bytes);
  // Whether admit() may return later than `now` or eligible_at() hold anything back.
  bool shapes() const noexcept { return sampler_.delays() || !schedule_.empty() || bucket_.limited(); }

  void reconfigure(const EmulationConfig& config, std::vector<SlowdownWindow> windows, Nanos origin, Nanos now);

 private:
  std::uint64_t stream_;
  std::uint64_t reconfigurations_ = 0;
  DelaySampler sampler_;
  SlowdownSchedule schedule_;
  TokenBucket bucket_;
  Nanos last_due_{Nanos::min()};
};

}  // namespace netio::emulated
