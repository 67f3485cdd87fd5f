// SPDX-License-Identifier: MIT
// What a netio_tsbench run records, and the summary computed from it (its JSON keys:
// docs/man/netio_tsbench.1.md).
//
// Times are nanoseconds of the recording node's steady clock, relative to the run's origin
// (its start on that node). In a local run every node shares one clock; in a role run each
// process records and summarises its own share.
#pragma once

#include "netio/scheduler/simulation/records.hpp"
#include "netio/scheduler/time.hpp"

#include "netio/scheduler/fallback_guard.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netio::tools::tsbench {

namespace ns = netio::scheduler;

// The records themselves (TimesliceRecord, IntervalRecord, FillSample, RunRecords) are the
// simulator's (netio/scheduler/simulation/records.hpp): the socket runs record the same.
using scheduler::simulation::FillSample;
using scheduler::simulation::IntervalRecord;
using scheduler::simulation::RunRecords;
using scheduler::simulation::TimesliceRecord;

// The summary's keys per scheduler (netio_tsbench --json).
struct RunSummary {
  std::uint64_t timeslices = 0;  // handed over, complete or not
  std::uint64_t incomplete = 0;
  double spread_median_us = 0, spread_p90_us = 0, spread_max_us = 0;  // complete ones after the warm-up
  double gbps = 0;  // contribution bytes after the warm-up / the time they took to arrive
  double fill_median_pct = 0, fill_max_pct = 0;
  std::uint64_t measured = 0;                 // time-slices the statistics cover
  std::optional<ns::FallbackStats> fallback;  // DFS: how often the DDE fell back to best-effort
  // A compute node lost (--fail, or a process killed): every time-slice below the run's
  // count reached some application complete, or is `lost`; `duplicates` were built a second
  // time (each with a higher attempt, else `same_attempt`); `reassigned` were built by
  // another node than their own (attempt > 0).
  std::uint64_t lost = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t same_attempt = 0;
  std::uint64_t reassigned = 0;
  std::uint32_t computes_failed = 0;
  // --fail: the aggregate before the failure (Gb/s over the 2 s before it, complete
  // time-slices by hand-over time); the time from the failure to the start of the first
  // 200 ms window (in steps of 10 ms, the first one starting 10 ms after the failure) whose
  // aggregate is at or above 0.95 x (M-1)/M of that (NaN: never, or no failure); the lowest
  // 200 ms aggregate in the 2 s after the failure.
  double capacity_before_gbps = 0;
  double recovery_ms = 0;
  double lowest_after_gbps = 0;
  // DFS or assignment by load: the DDE replicas lost with the failure (the compute nodes they
  // ran on), and the proposals and assignments the inputs took after it, summed over the
  // inputs (above 0: pacing and assignment went on, from the replicas left).
  std::vector<ns::ComputeIndex> dde_replicas_lost;
  std::uint64_t proposals_after_failure = 0;
  std::uint64_t assignments_after_failure = 0;
  // --drain, --join: the aggregate in the 2 s before the change and from 1 s after it to
  // half a second before the last hand-over (complete time-slices by hand-over time, NaN when
  // the run has no such stretch); --join: the time from the join to the joined node's first
  // hand-over (NaN: none).
  std::uint32_t computes_drained = 0;
  std::uint32_t computes_joined = 0;
  std::uint32_t inputs_joined = 0;    // --join 'input,at=T': 1 once the standby input joined
  std::uint64_t input_join_from = 0;  // its boundary: the first time-slice built with it
  double membership_before_gbps = 0;
  double membership_after_gbps = 0;
  double joined_first_ms = 0;
  // The inputs' back-pressure and losses, summed over them.
  std::uint64_t contributions_reassigned = 0;
  std::uint32_t computes_lost = 0;
  std::uint64_t pushes_blocked = 0;
  double push_blocked_s = 0;
  std::uint64_t assignment_waits = 0;  // assignment by load: an input waited for its interval's
  double assignment_wait_s = 0;        // assignment, how often and how long in all
  // Assignment by load: the current assignment (the last interval the coordinator decided,
  // and its shares per compute node: a lost node's 0); none under the fixed assignment.
  std::optional<ns::IntervalAssignment> assignment;
};

// The fraction of the capacity a run must be back to after losing one of M compute nodes.
inline double recovered_fraction(std::uint32_t computes) {
  return computes <= 1 ? 0.0 : 0.95 * (computes - 1) / computes;
}

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
