// SPDX-License-Identifier: MIT
#include "netio/scheduler/clock_synchronizer.hpp"

#include "netio/error.hpp"
#include "netio/scheduler/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace netio::scheduler {
namespace {

Duration scaled(double factor, Duration d) {
  return Duration{static_cast<Duration::rep>(std::llround(factor * static_cast<double>(d.count())))};
}

}  // namespace

ClockSynchronizer::ClockSynchronizer(std::uint32_t input_count, std::uint32_t history_length, double max_drift)
    : history_length_(history_length), max_drift_(std::abs(max_drift)), inputs_(input_count) {}

const ClockSynchronizer::Input& ClockSynchronizer::input(InputIndex i) const {
  if (i >= inputs_.size()) {
    throw Error(Errc::invalid_option,
                "clock synchronizer: input " + std::to_string(i) + " out of range (" + std::to_string(inputs_.size()) +
                    " inputs)");
  }
  return inputs_[i];
}

bool ClockSynchronizer::on_report(InputIndex i, IntervalIndex interval, Time interval_end, Duration latency,
                                  Time received_at) {
  input(i);  // range check
  Input& in = inputs_[i];
  if (in.last_interval && interval <= *in.last_interval) return false;
  const Duration offset = received_at - interval_end - latency;  // Eq. 2
  if (in.last_interval && interval_end > in.last_end) {            // Eq. 3, one sample
    const double sample = static_cast<double>((offset - in.offset).count()) /
                          static_cast<double>((interval_end - in.last_end).count());
    in.drifts.push_back(sample);
    if (in.drifts.size() > history_length_) in.drifts.pop_front();
    in.median_drift = std::clamp(median(std::vector<double>(in.drifts.begin(), in.drifts.end())), -max_drift_, max_drift_);
  }
  in.last_interval = interval;
  in.last_end = interval_end;
  in.offset = offset;
  return true;
}

void ClockSynchronizer::on_handshake(InputIndex i, Time remote_at, Duration offset) {
  input(i);  // range check
  Input& in = inputs_[i];
  if (in.last_interval) return;
  in.handshake = true;
  in.last_end = remote_at;
  in.offset = offset;
}

bool ClockSynchronizer::knows(InputIndex i) const { return input(i).last_interval.has_value() || input(i).handshake; }
Duration ClockSynchronizer::offset(InputIndex i) const { return input(i).offset; }
double ClockSynchronizer::drift(InputIndex i) const { return input(i).median_drift; }

Time ClockSynchronizer::to_local(InputIndex i, Time remote) const {
  const Input& in = input(i);
  return remote + in.offset + scaled(in.median_drift, remote - in.last_end);
}

Time ClockSynchronizer::to_remote(InputIndex i, Time local) const {
  // Solves local = x + offset + drift * (x - last_end) for x, relative to last_end so that
  // the double holds a small number, not ns since the epoch.
  const Input& in = input(i);
  const Duration since_end = local - in.offset - in.last_end;
  // A drift of -100 % or less is no clock (a driver fed times of different clocks): no
  // extrapolation rather than a division by zero.
  const double rate = 1.0 + in.median_drift;
  return in.last_end + (rate > 0 ? scaled(1.0 / rate, since_end) : since_end);
}

}  // namespace netio::scheduler
