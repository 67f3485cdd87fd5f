// SPDX-License-Identifier: MIT
// Shared by the hand-computed tests of assignment by load's membership (compute nodes and
// inputs joining): a configuration by load, and an input node sending a whole interval.
#pragma once

#include "netio/scheduler/assigner.hpp"
#include "netio/scheduler/input_node.hpp"

#include <catch2/catch.hpp>

#include <cstdint>

namespace netio::test {

inline scheduler::SchedulerConfig by_load(std::uint32_t inputs, std::uint32_t computes,
                                          std::uint64_t timeslices_per_interval) {
  scheduler::SchedulerConfig c;
  c.input_count = inputs;
  c.compute_count = computes;
  c.timeslices_per_interval = timeslices_per_interval;
  c.assignment = scheduler::Assignment::load;
  return c;
}

// Sends `count` time-slices (an interval) from `input`, each as soon as next() names it;
// returns the load report that closed the interval.
inline scheduler::LoadReport send_interval(scheduler::InputNode& input, std::uint64_t count) {
  const scheduler::Time now{0};
  for (std::uint64_t k = 0; k < count; ++k) {
    const auto next = input.next(now);
    REQUIRE(next.what == scheduler::InputNode::Next::What::send);
    input.on_sent(next.timeslice, now);
  }
  auto report = input.take_load_report();
  REQUIRE(report);
  return *report;
}

}  // namespace netio::test
