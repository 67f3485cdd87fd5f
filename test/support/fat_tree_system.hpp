// SPDX-License-Identifier: MIT
// The system the simulator's fat-tree tests run (ns3_fat_tree_network_test.cpp,
// simulation_lossless_fabric_test.cpp): 2 inputs and 2 compute nodes on 1 Gb/s links, 64 KiB
// contributions, 4 credits per pair, 2 rounds per interval, 40 time-slices; and when its last
// contribution arrived.
#pragma once

#include "netio/scheduler/simulation/simulate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace netio::test {

inline scheduler::simulation::SimulatedSystem fat_tree_two_by_two() {
  scheduler::simulation::SimulatedSystem s;
  s.scheduler.input_count = 2;
  s.scheduler.compute_count = 2;
  s.scheduler.timeslices_per_interval = 4;
  s.scheduler.history_length = 3;
  s.contribution_bytes = 64 * 1024;
  s.buffer_bytes = 4 * 2 * s.contribution_bytes;
  EmulationConfig e;
  e.node_in = RateLimit{125e6, 64 * 1024};
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    e.node_id = rank;
    s.nodes.push_back(e);
  }
  s.emulate = "in=1Gbps";
  s.timeslices = 40;
  return s;
}

// When the run's last contribution arrived, in seconds of model time.
inline double last_arrival_s(const scheduler::simulation::SimulationResult& r) {
  scheduler::Time latest{0};
  for (const auto& t : r.records.timeslices) latest = std::max(latest, t.last_arrival);
  return std::chrono::duration<double>(latest).count();
}

}  // namespace netio::test
