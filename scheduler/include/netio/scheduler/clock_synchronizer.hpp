// SPDX-License-Identifier: MIT
/// @file
/// The DDE's Clock Synchronizer: offset and drift of every input node's clock against the
/// local one, by one of two rules (ClockRule in config.hpp).
///
/// paper (the paper's Eq. 2 and 3). For each report of IE i about interval j, received at
/// local time lt:
///   tmend_j        = tm_j + durm_j                        (IE clock)
///   toffset_{i,j}  = lt - tmend_j - lat_i                 (local = IE + offset)
///   drift_{i,x}    = (toffset_{i,x} - toffset_{i,x-1}) / (tmend_x - tmend_{x-1})
///   drift_i        = median of the last history_length drift_{i,x}, clamped to ±max_drift
/// where x-1 is the previous report of the same IE (a lost report is skipped). lat_i is the
/// one-way latency of the report; the caller passes it (the DDE uses half the IE's median
/// send → acknowledgement time).
///
/// filtered (our extension). A report's sample lt - tmend_j is the offset plus the time the
/// report took, and that time is a latency draw plus whatever the report queued behind:
/// always ≥ the path's least latency, often milliseconds more. The paper's rule takes every
/// sample as it comes, so each IE's offset, and with it the start each IE is told, is off by
/// its latest report's queueing, differently for every IE. This rule keeps the last
/// filter_length samples, moves each to the newest report's time with the drift, and takes
/// the smallest (NTP's clock filter: the sample that queued least). No latency is
/// subtracted: what remains is the least one-way latency, the same for every IE on one
/// network, and a bias common to all IEs cancels (the DDE adds it to every start it records
/// and takes it off every start it proposes). The drift is the slope of the samples' lower
/// envelope over the last 4 × filter_length reports (the line under all of them that lies
/// closest to them: Moon, Skelly and Towsley's skew estimate), used from 2 × filter_length
/// reports on and clamped to ±max_drift: queueing only ever adds to a sample, so a report
/// that queued long moves neither the offset nor the drift. Before that an IE takes the
/// common drift: the median of every IE's envelope slope (each from 4 reports on; 0 until
/// every IE has one), the local clock's rate against the IEs'. With a
/// drift of 0 instead, the filter would take the oldest or the newest sample by the sign of
/// the local clock's drift against the IE's, and two replicas whose clocks run at different
/// rates would err differently for every IE; with the common one, what remains is each IE's
/// drift against the others, which every replica sees alike.
///
/// Either way the offset at another IE time T is extrapolated from the latest report:
/// toffset + drift_i * (T - tmend).
///
/// Reports of one IE must be fed in interval order; an older or repeated interval is ignored.
///
/// The clamp: a drift sample divides the change of two offsets, each carrying the report's
/// receive-time jitter, by the time between two interval ends. With intervals of a few
/// milliseconds that jitter is a large part of the denominator (two reports arriving together
/// give a sample of -100 %), and extrapolating a proposal's start with such a drift put it
/// seconds off. Real clocks drift by parts per million, so the estimate is bounded by
/// max_drift (SchedulerConfig::max_clock_drift, 1 % by default).
///
/// Not thread-safe: one caller (the DDE).
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace netio::scheduler {

class ClockSynchronizer {
 public:
  ClockSynchronizer(std::uint32_t input_count, std::uint32_t history_length, double max_drift = 0.01,
                    ClockRule rule = ClockRule::paper, std::uint32_t filter_length = 8);

  /// One report of input i: the interval, its end in the IE's clock, the one-way latency
  /// (the paper's rule subtracts it; the filtered rule does not use it) and the local time
  /// the report arrived. Returns false (and changes nothing) for an interval
  /// not newer than the last one of i. Throws netio::Error (Errc::invalid_option) for i out of range.
  bool on_report(InputIndex i, IntervalIndex interval, Time interval_end, Duration latency, Time received_at);

  /// filtered: a clock sample of input i sent at IE time sent_at as an interval started
  /// (extension 9), arrived at local time received_at: one more sample for the filter and the
  /// envelope, in the IE's time order with the reports'. paper: ignored. Returns false when
  /// ignored (the paper's rule, or older than every sample kept).
  bool on_sample(InputIndex i, Time sent_at, Time received_at);
  /// The start handshake's estimate (control_messages.hpp): local = remote + offset around IE
  /// time `remote_at`. Taken only before i's first report (a report's offset is newer).
  /// Throws (Errc::invalid_option) for i out of range.
  void on_handshake(InputIndex i, Time remote_at, Duration offset);

  bool knows(InputIndex i) const;       ///< a report of i, or its handshake
  Duration offset(InputIndex i) const;  ///< latest toffset_{i,j}; 0 before the first report
  /// The drift estimate of i, within ±max_drift. paper: the median of the last drift samples,
  /// 0 with fewer than two reports. filtered: i's own from 2 × filter_length reports on, before
  /// that common_drift().
  double drift(InputIndex i) const;
  /// filtered: the local clock's rate against the IEs' typical one: the median over the IEs of
  /// their envelope slopes, each from 4 reports on; 0 until every IE has one. paper: 0.
  double common_drift() const noexcept { return common_drift_; }

  /// IE i's clock → local clock and back, using the latest offset and the median drift.
  Time to_local(InputIndex i, Time remote) const;
  Time to_remote(InputIndex i, Time local) const;

 public:
  struct Sample {
    Time end{0};         ///< tmend, IE clock
    Duration offset{0};  ///< lt - tmend
  };

 private:
  struct Input {
    std::optional<IntervalIndex> last_interval;
    bool handshake = false;  ///< the offset comes from the start handshake (no report yet)
    Time last_end{
        0};  ///< the IE time the offset refers to: the newest sample's (filtered), tmend of the last report (paper)
    Duration offset{0};
    std::deque<double> drifts;    ///< paper: the last history_length drift samples, oldest first
    double paper_drift = 0;       ///< paper: the median of drifts
    std::deque<Sample> samples;   ///< filtered: the last 4 × filter_length lt - tmend, oldest first
    std::optional<double> slope;  ///< filtered: the samples' lower envelope's slope, from slope_samples on
    std::optional<double> drift;  ///< filtered: this IE's own drift, the slope from 2 × filter_length samples on
  };
  // filtered: an IE's envelope slope enters the common drift from this many samples on (from
  // 3, the replica test's two replicas proposed the 4th interval up to 187 µs apart).
  static constexpr std::size_t slope_samples = 4;
  const Input& input(InputIndex i) const;
  void filter(Input& in, Time interval_end, Duration sample) const;
  void update_common_drift();

  std::uint32_t history_length_;
  double max_drift_;
  ClockRule rule_;
  std::uint32_t filter_length_;
  std::vector<Input> inputs_;
  double common_drift_ = 0;  ///< filtered: see common_drift()
};

}  // namespace netio::scheduler
