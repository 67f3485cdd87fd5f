// SPDX-License-Identifier: MIT
// What a run of the scheduled-push system records: every time-slice as its compute node saw
// it, every DFS interval as its input measured it, and the receive buffers' fill. The
// simulator (simulate.hpp) fills them in; netio_tsbench's socket runs record the same, so
// that one summary (tools/tsbench/records.hpp) reads both.
//
// Times are nanoseconds relative to the run's origin. In the simulator that is the model's
// true time; in a socket run the recording node's steady clock.
#pragma once

#include "netio/scheduler/assigner.hpp"
#include "netio/scheduler/fallback_guard.hpp"
#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace netio::scheduler::simulation {

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
  std::uint32_t attempt = 0;  // its delivery number: above 0 when a lost compute node's
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
  std::uint64_t buffer_bytes = 0;  // per compute node
  double peak_fill_percent = 0;    // the most any receive buffer held at once (warm-up included)
  std::uint64_t corrupt = 0;       // contributions whose stamp did not match
  std::uint64_t timeslices_per_interval = 1;
  std::uint32_t warmup_intervals = 0;  // left out of the statistics
  // DFS: the DDE's safety net (its replica on compute node 0), when known.
  std::optional<ns::FallbackStats> fallback;
  // Assignment by load: every interval's assignment the coordinator decided, in order.
  std::vector<ns::IntervalAssignment> assignments;
  // A compute node failed (netio_tsbench --fail): when (relative to the origin) and how many.
  std::optional<ns::Time> failed_at;
  std::uint32_t computes_failed = 0;
  // DFS or assignment by load, with a failure: the DDE replicas lost with it (by the compute
  // node they ran on), and the proposals and assignments the inputs took after it (from the
  // replicas left: DFS's pacing and the assignment went on), summed over the inputs.
  std::vector<ns::ComputeIndex> dde_replicas_lost;
  std::uint64_t proposals_after_failure = 0;
  std::uint64_t assignments_after_failure = 0;
  // Membership (netio_tsbench --drain, --join): when the node was drained or joined
  // (relative to the origin), and how many; the joined slot's index.
  std::optional<ns::Time> membership_at;
  std::uint32_t computes_drained = 0;
  std::uint32_t computes_joined = 0;
  std::optional<ns::ComputeIndex> joined_compute;
  // netio_tsbench --join 'input,at=T': standby inputs that joined, and the boundary named (the
  // first time-slice built with the joiner; 0: none).
  std::uint32_t inputs_joined = 0;
  std::uint64_t input_join_from = 0;
  // Time-slices the run pushed (0 .. expected − 1), when known: what "lost" counts against.
  std::optional<std::uint64_t> expected_timeslices;
  // The inputs' side, summed over them (back-pressure, item 4 of issue 51).
  std::uint64_t contributions_reassigned = 0;  // sent to another node because theirs was lost
  std::uint32_t computes_lost = 0;             // the most any input lost
  ns::Duration push_blocked{0};                // time push() waited for room, every input
  std::uint64_t pushes_blocked = 0;            // pushes that waited
  ns::Duration assignment_wait{0};             // assignment by load: time inputs waited for one
  std::uint64_t assignment_waits = 0;          // how often
};

}  // namespace netio::scheduler::simulation
