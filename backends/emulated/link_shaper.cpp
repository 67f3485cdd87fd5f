// SPDX-License-Identifier: MIT
#include "backends/emulated/link_shaper.hpp"

#include <algorithm>
#include <cmath>

namespace netio::emulated {

LinkShaper::LinkShaper(const EmulationConfig& config, std::vector<SlowdownWindow> windows, Nanos origin,
                       std::uint64_t stream, Nanos now)
    : stream_(stream),
      sampler_(config.delay, config.seed, stream),
      schedule_(windows, origin),
      bucket_(config.connection_rate, SlowdownSchedule(windows, origin), now) {}

void LinkShaper::reconfigure(const EmulationConfig& config, std::vector<SlowdownWindow> windows, Nanos origin,
                             Nanos now) {
  // A stream of its own per configuration: later draws are new ones, and still reproducible.
  ++reconfigurations_;
  sampler_ = DelaySampler(config.delay, config.seed, stream_ + (reconfigurations_ << 40));
  schedule_ = SlowdownSchedule(windows, origin);
  bucket_.reconfigure(config.connection_rate, SlowdownSchedule(std::move(windows), origin), now);
}

Nanos LinkShaper::admit(Nanos now) {
  Nanos due = now;
  if (sampler_.delays()) due += Nanos(static_cast<Nanos::rep>(std::llround(sampler_.next_ns())));
  if (!schedule_.empty()) due += schedule_.extra_delay(now);
  due = std::max(due, last_due_);
  last_due_ = due;
  return due;
}

Nanos LinkShaper::eligible_at(Nanos now, Nanos due, std::size_t bytes) {
  if (!bucket_.limited()) return due;
  return bucket_.ready_at(std::max(now, due), bytes);
}

void LinkShaper::released(Nanos now, std::size_t bytes) { bucket_.consume(now, bytes); }

}  // namespace netio::emulated
