// SPDX-License-Identifier: MIT
// The simulator's recording: what a run records (RunRecords) as the nodes report it, and how
// far apart the two DDE replicas' proposals are. It knows no event, no port and no engine:
// the nodes (simulator.cpp) tell it what happened and when, in the model's true time.
#pragma once

#include "netio/scheduler/assigner.hpp"
#include "netio/scheduler/simulation/records.hpp"
#include "netio/scheduler/simulation/simulate.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace netio::scheduler::simulation {

class RunRecorder {
 public:
  RunRecorder(std::uint64_t buffer_bytes, std::uint64_t timeslices_per_interval, std::uint32_t warmup_intervals);

  void timeslice(const TimesliceRecord& record) { records_.timeslices.push_back(record); }
  void interval(const IntervalRecord& record) { records_.intervals.push_back(record); }
  // Compute node c's receive buffer holds `held_bytes` at `at`.
  void fill(Time at, ComputeIndex c, std::uint64_t held_bytes);
  // The most compute node's buffer held at once during the run (called once per node at the end).
  void peak(std::uint64_t held_bytes);
  // One DDE replica proposed `start` (true time) for the input's interval: the first of the
  // two to propose leaves it here, the second takes it and records how far apart they are.
  void proposed(InputIndex input, IntervalIndex interval, Time start);
  // Assignment by load: the coordinator (compute node 0) and its replica (compute node 1)
  // decided an interval's assignment: whichever comes second is compared with the first.
  void assigned(const IntervalAssignment& assignment) { compare(assignment, 0); }
  void replica_assigned(const IntervalAssignment& assignment) { compare(assignment, 1); }
  // The replica's decision after the coordinator's node failed: the assignment in force.
  void assigned_by_replica(const IntervalAssignment& assignment);

  // Hands the records over, in order (time-slices by index, intervals by input then index),
  // with the DDE's fallback statistics when there is a DDE.
  void finish(SimulationResult& result, std::optional<FallbackStats> fallback);

 private:
  void compare(const IntervalAssignment& assignment, int by);

  RunRecords records_;
  std::map<IntervalIndex, std::pair<int, IntervalAssignment>> first_assigned_;  // by whom, what
  std::uint64_t assignments_compared_ = 0;
  std::uint64_t assignment_mismatches_ = 0;
  std::map<std::pair<InputIndex, IntervalIndex>, Time> proposed_starts_;  // the first replica's, true time
  std::vector<Duration> replica_gaps_;  // |second - first|, true time, per proposal both made
};

}  // namespace netio::scheduler::simulation
