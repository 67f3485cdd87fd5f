// SPDX-License-Identifier: MIT
// What a netio_tsbench run records, and the summary computed from it (its JSON keys:
// docs/man/netio_tsbench.1.md).
//
// Times are nanoseconds of the recording node's steady clock, relative to the run's origin
// (its start on that node). In a local run every node shares one clock; in a role run each
// process records and summarises its own share.
#pragma once

#include "netio/scheduler/time.hpp"

#include "netio/scheduler/fallback_guard.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netio::tools::tsbench {

namespace ns = netio::scheduler;

// One time-slice as its compute node saw it.
struct TimesliceRecord {
  ns::TimesliceIndex timeslice = 0;
  ns::ComputeIndex compute = 0;
  bool complete = true;
  ns::Time first_arrival{0};  // its first contribution arrived
  ns::Time last_arrival{0};   // its last one (completion spread = last - first)
  ns::Time handed_over{0};    // the handler ran
  std::uint64_t bytes = 0;    // its contributions' bytes
};

// One DFS interval as one input measured it, and the plan it was paced by.
struct IntervalRecord {
  ns::InputIndex input = 0;
  ns::IntervalIndex interval = 0;
  ns::Time actual_start{0};
  ns::Duration actual_duration{0};
  std::optional<ns::Time> proposed_start;  // none: best-effort (no proposal yet)
  std::optional<ns::Duration> proposed_duration;
};

// A receive buffer's fill level at one moment.
struct FillSample {
  ns::Time at{0};
  ns::ComputeIndex compute = 0;
  double percent = 0;
};

struct RunRecords {
  std::vector<TimesliceRecord> timeslices;
  std::vector<IntervalRecord> intervals;
  std::vector<FillSample> fill;
  std::uint64_t buffer_bytes = 0;     // per compute node
  double peak_fill_percent = 0;       // the most any receive buffer held at once (warm-up included)
  std::uint64_t corrupt = 0;          // contributions whose stamp did not match
  std::uint64_t timeslices_per_interval = 1;
  std::uint32_t warmup_intervals = 0;  // left out of the statistics
  // DFS: the DDE's safety net (its replica on compute node 0), when known.
  std::optional<ns::FallbackStats> fallback;
};

// The summary's keys per scheduler (netio_tsbench --json).
struct RunSummary {
  std::uint64_t timeslices = 0;  // handed over, complete or not
  std::uint64_t incomplete = 0;
  double spread_median_us = 0, spread_p90_us = 0, spread_max_us = 0;  // complete ones after the warm-up
  double gbps = 0;  // contribution bytes after the warm-up / the time they took to arrive
  double fill_median_pct = 0, fill_max_pct = 0;
  std::uint64_t measured = 0;  // time-slices the statistics cover
  std::optional<ns::FallbackStats> fallback;  // DFS: how often the DDE fell back to best-effort
};

// Which times may be compared: `shared`, every node's records are on one clock (a local or
// simulated run): Gb/s is all bytes over the first to the last arrival anywhere, fill
// samples count from that first arrival. `per_compute`, each compute node's records are on
// its own clock (a role run collected from several processes or hosts): Gb/s is the sum
// over the compute nodes of each one's bytes over its own first to last arrival, fill
// samples count from each node's first measured arrival.
enum class ClockBasis { shared, per_compute };

RunSummary summarize(const RunRecords& records, ClockBasis basis = ClockBasis::shared);

// Per `bin` of time: the contribution bytes of time-slices handed over in it, as Gb/s.
struct BandwidthBin {
  ns::Time start{0};
  double gbps = 0;
};
std::vector<BandwidthBin> bandwidth_over_time(const RunRecords& records, ns::Duration bin);

}  // namespace netio::tools::tsbench
