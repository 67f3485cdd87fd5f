// SPDX-License-Identifier: MIT
// The lossless credit-flow-controlled fat-tree (scheduler/simulation, lossless_fabric.hpp)
// against hand-computed cases: one link, incast onto one port, a parking lot, credit
// back-pressure stopping an upstream link, tree saturation slowing a flow that does not go to
// the hotspot, the control lane passing queued data, determinism for a seed; and the simulator
// on it (lossless_fat_tree.hpp) against the fluid lossless model on a fair case.
//
// Every link at 1 byte/ns, 1 µs of delay, packets of at most 1030 bytes with a 30-byte header:
// a full packet (1000 bytes of payload) takes P = 1030 ns on a link.
#include "netio/scheduler/simulation/lossless_fabric.hpp"
#include "netio/scheduler/simulation/lossless_fat_tree.hpp"

#include "netio/error.hpp"

#include "support/fat_tree_system.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace {

namespace ns = netio::scheduler;
namespace sim = netio::scheduler::simulation;
using namespace std::chrono_literals;

constexpr std::int64_t packet_ns = 1030;  // P
constexpr std::int64_t delay_ns = 1000;

sim::LosslessFabricConfig unit_fabric(std::size_t leaves, std::size_t hosts_per_leaf, std::size_t spines) {
  sim::LosslessFabricConfig c;
  c.leaves = leaves;
  c.hosts_per_leaf = hosts_per_leaf;
  c.spines = spines;
  c.host_link_bytes_per_second = 1e9;
  c.uplink_bytes_per_second = 1e9;
  c.link_delay = std::chrono::nanoseconds(delay_ns);
  c.mtu_bytes = 1030;
  c.header_bytes = 30;
  c.port_buffer_bytes = 64 * 1030;
  return c;
}

// Sends a message and notes when it is delivered (-1 until then).
struct Deliveries {
  std::vector<std::int64_t> at;
  std::size_t send(sim::LosslessFabric& f, std::uint32_t from, std::uint32_t to, std::uint64_t bytes,
                   std::uint32_t channel = 0, bool control = false) {
    const std::size_t index = at.size();
    at.push_back(-1);
    f.send(from, to, bytes, channel, control, [this, &f, index] { at[index] = f.now().count(); });
    return index;
  }
};

}  // namespace

TEST_CASE("lossless fat-tree: one path, hand-computed", "[simulation][fat-tree]") {
  sim::LosslessFabric f(unit_fabric(2, 4, 2));
  Deliveries d;
  SECTION("host, leaf, host: 10 packets, then the last one once more, and two delays") {
    d.send(f, 0, 1, 10'000);
    f.run();
    CHECK(d.at[0] == 10 * packet_ns + packet_ns + 2 * delay_ns);
    CHECK(f.counters().packet_hops == 20);
  }
  SECTION("across a spine: the last packet three more times, four delays") {
    d.send(f, 0, 4, 10'000);
    f.run();
    CHECK(d.at[0] == 10 * packet_ns + 3 * packet_ns + 4 * delay_ns);
    CHECK(f.counters().packet_hops == 40);
  }
  SECTION("a short last packet: 2500 bytes are packets of 1030, 1030 and 530 bytes") {
    d.send(f, 0, 1, 2'500);
    f.run();
    // The second packet is at the leaf at 2 P + delay and leaves it at 3 P + delay; the short
    // third waits behind it there.
    CHECK(d.at[0] == 3 * packet_ns + delay_ns + 530 + delay_ns);
  }
  SECTION("messages of a queue pair are delivered in order") {
    d.send(f, 0, 4, 5'000);
    d.send(f, 0, 4, 100);
    f.run();
    CHECK(d.at[0] < d.at[1]);
  }
}

TEST_CASE("lossless fat-tree: incast onto one port keeps it busy and drops nothing", "[simulation][fat-tree]") {
  auto c = unit_fabric(1, 4, 1);
  c.port_buffer_bytes = 4 * 1030;  // 4 packets per input port: the senders are held back
  sim::LosslessFabric f(c);
  Deliveries d;
  for (std::uint32_t h = 1; h <= 3; ++h) d.send(f, h, 0, 10'000);
  f.run();
  // The port to host 0 starts when the first packet is in (P + delay) and then never idles:
  // 30 packets, the last one arriving a delay after it left.
  const auto last = *std::max_element(d.at.begin(), d.at.end());
  CHECK(last == packet_ns + delay_ns + 30 * packet_ns + delay_ns);
  CHECK(std::count(d.at.begin(), d.at.end(), -1) == 0);
  CHECK(f.counters().messages_delivered == 3);
  const auto port = f.link(f.host_downlink(0));
  CHECK(port.packets == 30);
  CHECK(port.busy == std::chrono::nanoseconds(30 * packet_ns));
  for (std::uint32_t h = 1; h <= 3; ++h) CHECK(f.link(f.host_uplink(h)).most_buffered <= 4 * 1030);
}

TEST_CASE("lossless fat-tree: a full input port holds the upstream link idle", "[simulation][fat-tree]") {
  SECTION("one sender, one packet of buffer: a packet per P + 2 delays (the credit's way back)") {
    auto c = unit_fabric(1, 2, 1);
    c.port_buffer_bytes = 1030;
    sim::LosslessFabric f(c);
    Deliveries d;
    d.send(f, 0, 1, 10'000);
    f.run();
    // Packet k leaves host 0 at k (P + 2 delays): it reaches the leaf after P + delay, leaves
    // it at once, and its credit is back a delay later.
    constexpr std::int64_t round = packet_ns + 2 * delay_ns;
    CHECK(d.at[0] == 9 * round + packet_ns + delay_ns + packet_ns + delay_ns);
    CHECK(f.link(f.host_uplink(0)).busy == std::chrono::nanoseconds(10 * packet_ns));
  }
  SECTION("two senders onto one port: each sender's link idles half the time, its buffer full") {
    auto c = unit_fabric(1, 3, 1);
    c.port_buffer_bytes = 4 * 1030;
    sim::LosslessFabric f(c);
    Deliveries d;
    d.send(f, 1, 0, 100'000);
    d.send(f, 2, 0, 100'000);
    f.run();
    CHECK(f.counters().messages_delivered == 2);
    for (std::uint32_t h = 1; h <= 2; ++h) {
      const auto up = f.link(f.host_uplink(h));
      CHECK(up.packets == 100);  // nothing dropped, nothing sent twice
      CHECK(up.busy == std::chrono::nanoseconds(100 * packet_ns));
      // Its credits ran out (the rest of the buffer's worth on the wire) and it held no more.
      CHECK(up.most_buffered >= 3 * 1030);
      CHECK(up.most_buffered <= 4 * 1030);
      // Without credits its link would be done at 100 P; held back, it sends its last packet
      // only a buffer's worth (4 packets at half the port each) before the port's end, 200 P.
      CHECK(up.last_end.count() >= 190 * packet_ns);
      CHECK(up.last_end.count() <= 200 * packet_ns);
    }
    CHECK(f.counters().credit_stalls > 0);
  }
}

TEST_CASE("lossless fat-tree: a parking lot, round robin between input ports", "[simulation][fat-tree]") {
  // Host 4's port serves two input ports in turn: the spine's (flows 0 -> 4 and 1 -> 4, which
  // share it) and host 5's. So 5 -> 4 gets half the port and finishes at 2M; the other two a
  // quarter each until then, then half each: they finish at 3M (M: one flow's bytes on a link).
  sim::LosslessFabric f(unit_fabric(2, 4, 1));
  Deliveries d;
  d.send(f, 0, 4, 100'000);
  d.send(f, 1, 4, 100'000);
  d.send(f, 5, 4, 100'000);
  f.run();
  constexpr double m = 100.0 * packet_ns;
  CHECK(d.at[2] == Approx(2 * m).epsilon(0.03));
  CHECK(d.at[0] == Approx(3 * m).epsilon(0.03));
  CHECK(d.at[1] == Approx(3 * m).epsilon(0.03));
}

TEST_CASE("lossless fat-tree: a hotspot slows a flow that does not go to it (tree saturation)",
          "[simulation][fat-tree]") {
  // The victim 0 -> 7 and the flow 1 -> 4 share leaf 0's uplink and the spine's port into
  // leaf 1. With hosts 5 and 6 also sending to 4, host 4's port is full, the spine's input
  // port at leaf 1 fills with packets for 4, and the victim's packets wait behind them.
  auto victim_time = [](std::size_t spines, bool hotspot) {
    sim::LosslessFabric f(unit_fabric(2, 4, spines));
    Deliveries d;
    const auto victim = d.send(f, 0, 7, 100'000);
    d.send(f, 1, 4, 300'000);
    if (hotspot) {
      d.send(f, 5, 4, 300'000);
      d.send(f, 6, 4, 300'000);
    }
    f.run();
    return static_cast<double>(d.at[victim]);
  };
  // One spine: the victim shares the uplink (half of it) either way; the hotspot costs it more.
  const double alone = victim_time(1, false);
  CHECK(alone == Approx(200.0 * packet_ns).epsilon(0.05));
  CHECK(victim_time(1, true) >= 1.3 * alone);
  // Two spines: D-mod-k sends the victim (to 7) by spine 1 and the hotspot's traffic by
  // spine 0: no queue in common, not slowed.
  CHECK(victim_time(2, true) == Approx(victim_time(2, false)).epsilon(0.02));
}

TEST_CASE("lossless fat-tree: a control message on its lane passes queued data", "[simulation][fat-tree]") {
  // Hosts 1 and 2 fill host 0's port and their input ports (16 packets each); at 50 P host 1
  // sends 100 bytes of control to host 0.
  auto control_latency = [](bool lane) {
    auto c = unit_fabric(1, 3, 1);
    c.port_buffer_bytes = 16 * 1030;
    c.control_lane = lane;
    sim::LosslessFabric f(c);
    Deliveries d;
    d.send(f, 1, 0, 200'000);
    d.send(f, 2, 0, 200'000);
    std::size_t control = 0;
    const ns::Time sent{50 * packet_ns};
    f.at(sent, [&] { control = d.send(f, 1, 0, 100, 1, true); });
    f.run();
    REQUIRE(d.at.size() == 3);
    return d.at[control] - sent.count();
  };
  // On its lane: at most a data packet on each of the two links before it, its own 130 bytes
  // twice, two delays.
  CHECK(control_latency(true) <= 2 * packet_ns + 2 * 130 + 2 * delay_ns);
  // Without: behind host 1's full input port (16 packets at half the port each) and its credits.
  CHECK(control_latency(false) >= 30 * packet_ns);
}

TEST_CASE("lossless fat-tree: the same seed gives the same run", "[simulation][fat-tree]") {
  auto run = [](std::uint64_t seed) {
    auto c = unit_fabric(3, 4, 2);
    c.adaptive = true;
    c.port_buffer_bytes = 8 * 1030;
    c.seed = seed;
    sim::LosslessFabric f(c);
    Deliveries d;
    for (std::uint32_t from = 0; from < 12; ++from) {
      for (std::uint32_t to = 0; to < 12; ++to) {
        if (from != to) d.send(f, from, to, 1000 + 997 * ((from * 7 + to * 3) % 11), to % 2);
      }
    }
    f.run();
    CHECK(std::count(d.at.begin(), d.at.end(), -1) == 0);
    return d.at;
  };
  CHECK(run(7) == run(7));
  // The seed decides adaptive routing's ties: another one routes (and so delivers) otherwise.
  CHECK(run(7) != run(8));
}

TEST_CASE("lossless fat-tree: refuses what it cannot model", "[simulation][fat-tree]") {
  auto c = unit_fabric(2, 4, 2);
  c.port_buffer_bytes = 1000;
  CHECK_THROWS_WITH(sim::LosslessFabric(c), Catch::Contains("port buffer (1000 bytes)"));
  sim::LosslessFabric f(unit_fabric(2, 4, 2));
  CHECK_THROWS_AS(f.send(0, 8, 10, 0, false, [] {}), std::out_of_range);
  CHECK_THROWS_AS(f.send(3, 3, 10, 0, false, [] {}), std::invalid_argument);
  CHECK_THROWS_AS(f.send(3, 4, 10, 65536, false, [] {}), std::invalid_argument);
  sim::LosslessFatTreeOptions o;
  o.leaf_size = 6;
  o.oversubscription = 4;
  CHECK_THROWS_WITH(sim::lossless_fat_tree_network(o), Catch::Contains("--oversubscription 4:1"));
}

namespace {

using netio::test::last_arrival_s;
sim::SimulatedSystem two_by_two() { return netio::test::fat_tree_two_by_two(); }

sim::SimulationOptions exact(sim::NetworkModel network) {
  sim::SimulationOptions o;
  o.network = network;
  o.max_clock_offset = 0ns;
  o.max_clock_drift = 0;
  return o;
}

}  // namespace

TEST_CASE("lossless fat-tree: both schedulers build every time-slice, as the fluid model on a fair case",
          "[simulation][fat-tree]") {
  // Inputs on leaf 0, compute nodes on leaf 1, 1:1: every input's link is the bottleneck, as
  // in the fluid lossless model; 40 contributions of 64 KiB per input take 21 ms. (DFS's
  // pacing differs between the models: not a fair case to compare, it must build them all.)
  sim::LosslessFatTreeOptions f;
  f.leaf_size = 2;
  for (const auto mode : {ns::Mode::best_effort, ns::Mode::dfs}) {
    auto packets = exact(sim::NetworkModel::packet);
    packets.packet_network = sim::lossless_fat_tree_network(f);
    const auto on_tree = sim::simulate(two_by_two(), mode, packets);
    INFO(on_tree.network_summary);
    REQUIRE(on_tree.error.empty());
    CHECK(on_tree.records.timeslices.size() == 40);
    CHECK(last_arrival_s(on_tree) >= 40 * 65536 / 125e6);
    if (mode == ns::Mode::best_effort) {
      const auto fluid = sim::simulate(two_by_two(), mode, exact(sim::NetworkModel::lossless));
      REQUIRE(fluid.error.empty());
      CHECK(last_arrival_s(on_tree) == Approx(last_arrival_s(fluid)).epsilon(0.03));
    }
  }
  // At 2:1 (one spine for leaves of 2) the spine halves what crosses: twice the time.
  f.oversubscription = 2;
  auto packets = exact(sim::NetworkModel::packet);
  packets.packet_network = sim::lossless_fat_tree_network(f);
  const auto half = sim::simulate(two_by_two(), ns::Mode::best_effort, packets);
  REQUIRE(half.error.empty());
  const auto full = sim::simulate(two_by_two(), ns::Mode::best_effort, exact(sim::NetworkModel::lossless));
  CHECK(last_arrival_s(half) == Approx(2 * last_arrival_s(full)).epsilon(0.05));
}
