// SPDX-License-Identifier: MIT
// The packet-level fat-tree on ns-3 (scheduler/simulation/fabric/fat_tree_fabric.hpp) against
// hand-computed cases. Built only with NETIO_WITH_NS3. Each case simulates a few
// milliseconds of 1 Gb/s links: well under a second of CPU.
#include <fat_tree_fabric.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace {

using netio::fabric_model::FatTreeConfig;
using netio::fabric_model::FatTreeFabric;
using netio::fabric_model::SimTime;
using namespace std::chrono_literals;

constexpr double gbps = 1e9;
// A full packet carries 1448 payload bytes (1500 minus IPv4, TCP and its timestamp option)
// and takes 1502 bytes of the link (with the point-to-point header).
constexpr double wire_bytes_per_payload_byte = 1502.0 / 1448.0;

double seconds(SimTime t) { return std::chrono::duration<double>(t).count(); }

FatTreeConfig gigabit(std::size_t leaves, std::size_t hosts_per_leaf, std::size_t spines) {
  FatTreeConfig config;
  config.leaves = leaves;
  config.hosts_per_leaf = hosts_per_leaf;
  config.spines = spines;
  config.host_link_bits_per_second = gbps;
  config.uplink_bits_per_second = gbps;
  config.link_delay = 1us;
  return config;
}

// K senders each send `bytes` to host K (all on one leaf): the delivery times.
std::vector<double> incast(FatTreeConfig config, std::size_t senders, std::uint64_t bytes,
                           netio::fabric_model::FabricCounters* counters = nullptr) {
  FatTreeFabric fabric(config);
  std::vector<double> delivered(senders, -1.0);
  for (std::size_t s = 0; s < senders; ++s) {
    fabric.send(s, senders, bytes, [&delivered, s](SimTime at) { delivered[s] = seconds(at); });
  }
  fabric.run_until(10s);
  if (counters != nullptr) *counters = fabric.counters();
  return delivered;
}

}  // namespace

TEST_CASE("fat-tree fabric: a message over one path takes its bytes over the rate", "[ns3]") {
  // Host 0 -> leaf -> host 1: two 1 Gb/s links, store and forward at the leaf.
  FatTreeFabric fabric(gigabit(1, 2, 1));
  const std::uint64_t bytes = 1'000'000;
  double delivered = -1;
  fabric.send(0, 1, bytes, [&](SimTime at) { delivered = seconds(at); });
  fabric.run();
  const double expected = bytes * wire_bytes_per_payload_byte * 8 / gbps;  // 8.30 ms
  CHECK(delivered == Approx(expected).epsilon(0.03));
  CHECK(fabric.counters().messages_delivered == 1);
  CHECK(fabric.counters().packets_dropped == 0);

  SECTION("messages of a pair arrive in order, one after another") {
    std::vector<double> times;
    const double start = seconds(fabric.now());
    for (int i = 0; i < 3; ++i) fabric.send(0, 1, 100'000, [&](SimTime at) { times.push_back(seconds(at)); });
    fabric.run();
    REQUIRE(times.size() == 3);
    CHECK(times[0] < times[1]);
    CHECK(times[1] < times[2]);
    CHECK(times[2] - start == Approx(3 * 100'000 * wire_bytes_per_payload_byte * 8 / gbps).epsilon(0.05));
  }
}

TEST_CASE("fat-tree fabric: incast onto one port shares its rate", "[ns3]") {
  const std::size_t senders = 8;
  const std::uint64_t bytes = 256 * 1024;
  const double port_seconds = senders * bytes * wire_bytes_per_payload_byte * 8 / gbps;  // 17.4 ms

  SECTION("a buffer that holds every window: no loss, the port's rate") {
    auto config = gigabit(1, senders + 1, 1);
    config.port_buffer_bytes = 4 * 1024 * 1024;
    netio::fabric_model::FabricCounters counters;
    auto delivered = incast(config, senders, bytes, &counters);
    double last = 0;
    for (double t : delivered) {
      REQUIRE(t > 0);
      last = std::max(last, t);
    }
    CHECK(last == Approx(port_seconds).epsilon(0.03));
    CHECK(counters.packets_dropped == 0);
  }
  SECTION("a buffer of 10 packets: TCP loses and retransmits, every byte arrives") {
    auto config = gigabit(1, senders + 1, 1);
    config.port_buffer_bytes = 15'000;
    config.tcp_min_rto = 1ms;
    netio::fabric_model::FabricCounters counters;
    auto delivered = incast(config, senders, bytes, &counters);
    CHECK(*std::min_element(delivered.begin(), delivered.end()) > 0);
    CHECK(*std::max_element(delivered.begin(), delivered.end()) >= port_seconds * 0.99);
    CHECK(counters.messages_delivered == senders);
    CHECK(counters.packets_dropped > 0);
  }
}

TEST_CASE("fat-tree fabric: oversubscription divides what crosses the spines", "[ns3]") {
  // Hosts 0-3 (leaf 0) send 500 kB each to hosts 4-7 (leaf 1). With 4 spines (1:1) every flow
  // has an uplink of its own; with 2 (2:1) two flows share each (D-mod-k: 4 and 6 to spine 0,
  // 5 and 7 to spine 1); with 1 (4:1) all four share one.
  const std::uint64_t bytes = 500'000;
  const double alone = bytes * wire_bytes_per_payload_byte * 8 / gbps;
  for (std::size_t spines : {4, 2, 1}) {
    FatTreeFabric fabric(gigabit(2, 4, spines));
    CHECK(fabric.oversubscription() == Approx(4.0 / static_cast<double>(spines)));
    double last = 0;
    for (std::size_t h = 0; h < 4; ++h) {
      fabric.send(h, h + 4, bytes, [&](SimTime at) { last = std::max(last, seconds(at)); });
    }
    fabric.run_until(1s);
    INFO(spines << " spines");
    CHECK(last == Approx(alone * fabric.oversubscription()).epsilon(0.05));
  }
}

namespace {

// Leaves of 4 hosts, 4 spines (1:1), D-mod-k routing: traffic to host d climbs to spine d % 4.
// The victim, host 3 (leaf 0), sends 1 MB to `victim_to`; with `hotspot`, hosts 0-2 (leaf 0)
// and 9-11 (leaf 2) send 2 MB each to host 4 (leaf 1, spine 0). Returns the victim's time.
// A minimum RTO of 1 ms, as data-centre stacks tune it: with Linux's 200 ms, a lost segment of
// the victim's would cost it 200 ms, and the test would show timeouts rather than queues.
double victim_seconds(std::size_t victim_to, bool hotspot) {
  auto config = gigabit(3, 4, 4);
  config.tcp_min_rto = 1ms;
  FatTreeFabric fabric(config);
  double delivered = -1;
  fabric.send(3, victim_to, 1'000'000, [&](SimTime at) { delivered = seconds(at); });
  if (hotspot) {
    for (std::size_t sender : {0, 1, 2, 9, 10, 11}) fabric.send(sender, 4, 2'000'000, nullptr);
  }
  fabric.run_until(200ms);
  INFO("victim to host " << victim_to << (hotspot ? " beside the hotspot" : " alone"));
  REQUIRE(delivered > 0);
  return delivered;
}

}  // namespace

TEST_CASE("fat-tree fabric: a hotspot slows a flow that does not go to it", "[ns3]") {
  const double alone = victim_seconds(8, false);  // leaf 0 -> spine 0 -> leaf 2
  CHECK(alone == Approx(1'000'000 * wire_bytes_per_payload_byte * 8 / gbps).epsilon(0.05));
  // The hotspot's flows from leaf 0 climb the victim's uplink (to spine 0), whose queue they
  // fill while host 4's port holds them back: the victim gets a share of its uplink.
  const double beside_hotspot = victim_seconds(8, true);
  CHECK(beside_hotspot > 1.3 * alone);
  // The same victim to host 9 (spine 1) shares no queue with the hotspot: not slowed.
  const double other_uplink = victim_seconds(9, true);
  CHECK(other_uplink == Approx(alone).epsilon(0.05));
}

TEST_CASE("fat-tree fabric: a control message on its lane passes queued data", "[ns3]") {
  // Hosts 1 and 2 send 2 MB each to host 0 on channel 0: the leaf's port to host 0 (128 KiB,
  // 1 ms at 1 Gb/s) fills. At 5 ms host 1 sends 100 bytes on channel 1 (its connection opened
  // at the start).
  auto control_latency = [](bool lane) {
    auto config = gigabit(1, 3, 1);
    config.control_lane = lane;
    FatTreeFabric fabric(config);
    fabric.send(
        1, 0, 100, [](SimTime) {}, 1);  // the control connection, opened before the data fills the port
    for (std::size_t h = 1; h <= 2; ++h) fabric.send(h, 0, 2'000'000, [](SimTime) {});
    double delivered = -1;
    fabric.at(5ms, [&] {
      fabric.send(
          1, 0, 100, [&](SimTime at) { delivered = seconds(at); }, 1);
    });
    fabric.run_until(1s);
    CHECK(fabric.counters().messages_delivered == 4);
    return delivered - 0.005;
  };
  // On its lane: at most the packet on the wire at each of the two links before it (2 x 72 µs
  // at most; 21 µs measured).
  CHECK(control_latency(true) < 100e-6);
  // Without: behind the data queued at the port (TCP keeps it between half and full: 0.45 ms
  // measured). The test fails without the lanes' filter (ns-3's priority tag alone: 0.51 ms).
  CHECK(control_latency(false) > 200e-6);
}

TEST_CASE("fat-tree fabric: a seed gives the same run", "[ns3]") {
  auto config = gigabit(2, 4, 2);
  config.port_buffer_bytes = 15'000;
  config.tcp_min_rto = 1ms;
  config.ecmp = true;  // random uplinks per packet: the seed matters
  auto run = [&] {
    FatTreeFabric fabric(config);
    std::vector<std::int64_t> times;
    for (std::size_t s = 0; s < 7; ++s) {
      fabric.send(s, 7, 200'000, [&](SimTime at) { times.push_back(at.count()); });
    }
    fabric.run_until(1s);
    REQUIRE(times.size() == 7);
    return times;
  };
  const auto first = run();
  CHECK(run() == first);
}

TEST_CASE("fat-tree fabric: timers and stop() drive the clock", "[ns3]") {
  FatTreeFabric fabric(gigabit(1, 2, 1));
  std::vector<double> fired;
  fabric.at(SimTime(5ms), [&] {
    fired.push_back(seconds(fabric.now()));
    fabric.stop();
  });
  fabric.at(SimTime(7ms), [&] { fired.push_back(seconds(fabric.now())); });
  fabric.run_until(1s);
  CHECK(fabric.now() == SimTime(5ms));  // stopped by the first timer
  REQUIRE(fired.size() == 1);
  // The stop that run_until(1s) had scheduled is gone: this run goes on to 2 s.
  double delivered = -1;
  fabric.send(0, 1, 1000, [&](SimTime at) { delivered = seconds(at); });
  fabric.run_until(2s);
  CHECK(fabric.now() == SimTime(2s));
  REQUIRE(fired.size() == 2);
  CHECK(fired[1] == Approx(0.007));
  CHECK(delivered > 0.005);
  CHECK(delivered < 0.006);
}

TEST_CASE("fat-tree fabric: a wrong configuration or message is refused", "[ns3]") {
  auto config = gigabit(1, 2, 1);
  config.port_buffer_bytes = 1000;  // less than one 1500-byte packet
  CHECK_THROWS_AS(FatTreeFabric(config), std::invalid_argument);
  FatTreeFabric fabric(gigabit(1, 2, 1));
  CHECK(fabric.oversubscription() == Approx(2.0));
  CHECK_THROWS_AS(FatTreeFabric(gigabit(1, 2, 1)), std::logic_error);
  CHECK_THROWS_AS(fabric.send(0, 2, 1, nullptr), std::out_of_range);
  CHECK_THROWS_AS(fabric.send(1, 1, 1, nullptr), std::invalid_argument);
  CHECK_THROWS_AS(fabric.send(0, 1, 0, nullptr), std::invalid_argument);
}
