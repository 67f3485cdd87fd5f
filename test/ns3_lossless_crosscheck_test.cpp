// SPDX-License-Identifier: MIT
// The lossless fat-tree (our packet model, scheduler/simulation/lossless_fabric.hpp) against
// ns-3's Ethernet fat-tree (fabric/fat_tree_fabric.hpp) where both model the same thing: no
// loss (ns-3's buffers large enough never to drop) and the same bytes on the wire (a
// 1502-byte frame carrying 1448 bytes of payload in both). TCP's slow start and ACKs are ns-3's
// only extra: within a few percent. Built only with NETIO_WITH_NS3.
#include <fat_tree_fabric.hpp>

#include "netio/scheduler/simulation/lossless_fabric.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace {

using netio::fabric_model::FatTreeConfig;
using netio::fabric_model::FatTreeFabric;
using netio::fabric_model::SimTime;
namespace sim = netio::scheduler::simulation;
using namespace std::chrono_literals;

using Flow = std::pair<std::uint32_t, std::uint32_t>;

// The last delivery of `flows` (each `bytes`) on ns-3's fat-tree, in seconds; no drop.
double on_ns3(std::size_t leaves, std::size_t hosts_per_leaf, std::size_t spines, const std::vector<Flow>& flows,
              std::uint64_t bytes) {
  FatTreeConfig c;
  c.leaves = leaves;
  c.hosts_per_leaf = hosts_per_leaf;
  c.spines = spines;
  c.host_link_bits_per_second = 1e9;
  c.uplink_bits_per_second = 1e9;
  c.link_delay = 1us;
  c.port_buffer_bytes = 8 << 20;
  FatTreeFabric fabric(c);
  double last = 0;
  for (const auto& [from, to] : flows)
    fabric.send(from, to, bytes,
                [&last](SimTime at) { last = std::max(last, std::chrono::duration<double>(at).count()); });
  fabric.run_until(2s);
  CHECK(fabric.counters().packets_dropped == 0);
  CHECK(fabric.counters().messages_delivered == flows.size());
  return last;
}

double on_lossless(std::size_t leaves, std::size_t hosts_per_leaf, std::size_t spines, const std::vector<Flow>& flows,
                   std::uint64_t bytes) {
  sim::LosslessFabricConfig c;
  c.leaves = leaves;
  c.hosts_per_leaf = hosts_per_leaf;
  c.spines = spines;
  c.host_link_bytes_per_second = 125e6;
  c.uplink_bytes_per_second = 125e6;
  c.link_delay = 1us;
  c.mtu_bytes = 1502;
  c.header_bytes = 54;  // PPP, IPv4, TCP with timestamps: 1448 bytes of payload per frame, as ns-3's
  sim::LosslessFabric fabric(c);
  double last = 0;
  for (const auto& [from, to] : flows)
    fabric.send(from, to, bytes, 0, false,
                [&] { last = std::max(last, std::chrono::duration<double>(fabric.now()).count()); });
  fabric.run();
  CHECK(fabric.counters().messages_delivered == flows.size());
  return last;
}

}  // namespace

TEST_CASE("lossless fat-tree and ns-3's agree without loss: one path", "[ns3][fat-tree]") {
  const std::vector<Flow> one{{0, 5}};  // across a spine: four links
  const double ns3 = on_ns3(2, 4, 2, one, 1'000'000);
  CHECK(on_lossless(2, 4, 2, one, 1'000'000) == Approx(ns3).epsilon(0.03));
}

TEST_CASE("lossless fat-tree and ns-3's agree without loss: four flows over two spines (2:1)", "[ns3][fat-tree]") {
  // Hosts 0..3 to 4..7: D-mod-k puts two flows on each spine, each flow half an uplink.
  const std::vector<Flow> four{{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  const double ns3 = on_ns3(2, 4, 2, four, 1'000'000);
  const double lossless = on_lossless(2, 4, 2, four, 1'000'000);
  CHECK(lossless == Approx(ns3).epsilon(0.05));
  CHECK(lossless == Approx(2 * on_lossless(2, 4, 2, {{0, 4}}, 1'000'000)).epsilon(0.03));
}
