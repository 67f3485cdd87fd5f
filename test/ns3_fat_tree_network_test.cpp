// SPDX-License-Identifier: MIT
// The simulator on the ns-3 fat-tree (scheduler/simulation/fabric/fat_tree_network.hpp,
// NetworkModel::packet): both schedulers build every time-slice with every message through
// the fat-tree, and the spines' capacity bounds what crosses them. Built only with
// NETIO_WITH_NS3; 2 x 2 nodes on 1 Gb/s links, some 50 ms of model time per run.
#include <fat_tree_network.hpp>

#include "netio/scheduler/simulation/simulate.hpp"

#include "support/fat_tree_system.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>

namespace {

namespace ns = netio::scheduler;
namespace sim = netio::scheduler::simulation;
using netio::fabric_model::FatTreeNetworkOptions;
using namespace std::chrono_literals;

constexpr std::uint64_t contribution = 64 * 1024;

using netio::test::last_arrival_s;
sim::SimulatedSystem two_by_two() { return netio::test::fat_tree_two_by_two(); }

sim::SimulationOptions on_fat_tree(std::size_t oversubscription) {
  FatTreeNetworkOptions f;
  f.leaf_size = 2;
  f.oversubscription = oversubscription;
  f.port_buffer_bytes = 4 << 20;  // no drop: the rate alone (drops and TCP's timeouts: the benchmarks)
  sim::SimulationOptions o;
  o.network = sim::NetworkModel::packet;
  o.packet_network = netio::fabric_model::fat_tree_network(f);
  o.max_clock_offset = 0ns;
  o.max_clock_drift = 0;
  return o;
}

}  // namespace

TEST_CASE("simulator on the fat-tree: both schedulers build every time-slice, the spines bound the rate",
          "[ns3][simulation]") {
  for (const auto mode : {ns::Mode::best_effort, ns::Mode::dfs}) {
    INFO(std::string(ns::to_string(mode)));
    const auto full = sim::simulate(two_by_two(), mode, on_fat_tree(1));
    REQUIRE(full.error.empty());
    REQUIRE(full.records.timeslices.size() == 40);
    for (const auto& t : full.records.timeslices) CHECK(t.complete);
    CHECK_THAT(full.network_summary, Catch::Contains("4 hosts") && Catch::Contains("0 dropped"));
    // 80 contributions of 64 KiB: over two spines (1:1) the two compute links carry them, about
    // 21 ms; over one spine (2:1) one uplink carries all, twice that.
    const double bytes_on_wire = 80.0 * contribution * 9040 / 8948;  // 9000-byte packets, 52 + 40 bytes of headers
    const auto half = sim::simulate(two_by_two(), mode, on_fat_tree(2));
    REQUIRE(half.error.empty());
    CHECK(last_arrival_s(full) > bytes_on_wire / 2 / 125e6);
    CHECK(last_arrival_s(full) < 1.3 * bytes_on_wire / 2 / 125e6);
    CHECK(last_arrival_s(half) > bytes_on_wire / 125e6);
    CHECK(last_arrival_s(half) < 1.3 * bytes_on_wire / 125e6);
  }
}

TEST_CASE("simulator on the fat-tree: refused where it cannot model", "[ns3][simulation]") {
  FatTreeNetworkOptions f;
  f.leaf_size = 6;
  f.oversubscription = 4;  // 6 hosts per leaf over 1.5 spines
  CHECK_THROWS_WITH(netio::fabric_model::fat_tree_network(f), Catch::Contains("--oversubscription 4:1"));
  auto s = two_by_two();
  s.nodes[3].slowdowns.push_back({});
  CHECK_THROWS_WITH(sim::simulate(s, ns::Mode::best_effort, on_fat_tree(1)), Catch::Contains("--slowdown"));
}
