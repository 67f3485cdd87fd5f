// SPDX-License-Identifier: MIT
// The DDE's Clock Synchronizer: offset and drift of every input node's clock against the
// local one (paper Eq. 2 and 3).
//
// For each report of IE i about interval j, received at local time lt:
//   tmend_j        = tm_j + durm_j                        (IE clock)
//   toffset_{i,j}  = lt - tmend_j - lat_i                 (local = IE + offset)
//   drift_{i,x}    = (toffset_{i,x} - toffset_{i,x-1}) / (tmend_x - tmend_{x-1})
//   drift_i        = median of the last history_length drift_{i,x}, clamped to ±max_drift
// where x-1 is the previous report of the same IE (a lost report is skipped). The offset at
// another IE time T is extrapolated from the latest report: toffset + drift_i * (T - tmend).
// lat_i is the one-way latency of the report; the caller passes it (the DDE uses half the
// IE's median send → acknowledgement time).
//
// Reports of one IE must be fed in interval order; an older or repeated interval is ignored.
//
// The clamp: a drift sample divides the change of two offsets, each carrying the report's
// receive-time jitter, by the time between two interval ends. With intervals of a few
// milliseconds that jitter is a large part of the denominator (two reports arriving together
// give a sample of -100 %), and extrapolating a proposal's start with such a drift put it
// seconds off. Real clocks drift by parts per million, so the estimate is bounded by
// max_drift (SchedulerConfig::max_clock_drift, 1 % by default).
#pragma once

#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace netio::scheduler {

class ClockSynchronizer {
 public:
  ClockSynchronizer(std::uint32_t input_count, std::uint32_t history_length, double max_drift = 0.01);

  // One report of input i: the interval, its end in the IE's clock, the one-way latency and
  // the local time the report arrived. Returns false (and changes nothing) for an interval
  // not newer than the last one of i. Throws netio::Error (Errc::invalid_option) for i out of range.
  bool on_report(InputIndex i, IntervalIndex interval, Time interval_end, Duration latency, Time received_at);

  // The start handshake's estimate (control_messages.hpp): local = remote + offset around IE
  // time `remote_at`. Taken only before i's first report (a report's offset is newer).
  // Throws (Errc::invalid_option) for i out of range.
  void on_handshake(InputIndex i, Time remote_at, Duration offset);

  bool knows(InputIndex i) const;       // a report of i, or its handshake
  Duration offset(InputIndex i) const;  // latest toffset_{i,j}; 0 before the first report
  double drift(InputIndex i) const;     // median drift, within ±max_drift; 0 with fewer than two reports

  // IE i's clock → local clock and back, using the latest offset and the median drift.
  Time to_local(InputIndex i, Time remote) const;
  Time to_remote(InputIndex i, Time local) const;

 private:
  struct Input {
    std::optional<IntervalIndex> last_interval;
    bool handshake = false;  // the offset comes from the start handshake (no report yet)
    Time last_end{0};  // tmend of the last report, IE clock
    Duration offset{0};
    std::deque<double> drifts;  // the last history_length drift samples, oldest first
    double median_drift = 0;
  };
  const Input& input(InputIndex i) const;

  std::uint32_t history_length_;
  double max_drift_;
  std::vector<Input> inputs_;
};

}  // namespace netio::scheduler
