// SPDX-License-Identifier: MIT
// netio_tsbench --simulate: both network models (the emulator's ports, the lossless fluid
// one) against hand-computed times, the engines driven in them (completion times of
// time-slices under a known capacity), fair against first-come-first-served ports, replies
// crossing the network with their delay, the core, ports releasing late (--port-late), and
// determinism for a seed; the event queue's order.
#include "tsbench/simulated_run.hpp"

#include "netio/scheduler/simulation/event_heap.hpp"
#include "netio/scheduler/simulation/fluid_network.hpp"
#include "netio/scheduler/simulation/packed_pool.hpp"
#include "netio/scheduler/simulation/shared_port.hpp"

#include "support/invalid_option.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <queue>
#include <random>
#include <utility>
#include <vector>

using namespace netio::tools::tsbench;
using namespace netio::tools::tsbench::simulation;
using namespace netio::scheduler::simulation;
using namespace std::chrono_literals;
namespace ns = netio::scheduler;

namespace {

// 1000-byte contributions on ports of 8 Mb/s (1 byte per µs): 1 ms per contribution.
BenchConfig small(std::uint32_t inputs, std::uint32_t computes) {
  BenchConfig b;
  b.inputs = inputs;
  b.computes = computes;
  b.contribution_bytes = 1000;
  b.buffer_bytes = 2000 * inputs;  // 2 credits per input–compute pair
  b.interval_timeslices = computes;
  b.history_length = 3;
  b.warmup_intervals = 0;
  b.timeslices = 8;
  b.emulate = "in=8Mbps";
  return b;
}

SimulationOptions exact(PortSharing sharing = PortSharing::fair, NetworkModel network = NetworkModel::lossless) {
  SimulationOptions o;
  o.network = network;
  o.sharing = sharing;
  o.base_latency = 0ns;
  o.max_clock_offset = 0ns;
  o.max_clock_drift = 0;
  return o;
}

// 4 × 4 on small()'s ports for `duration`: 4 credits per pair, intervals of 10 rounds (40 ms).
BenchConfig four_by_four(std::chrono::nanoseconds duration) {
  auto b = small(4, 4);
  b.buffer_bytes = 4 * 4 * 1000;
  b.interval_timeslices = 40;
  b.timeslices = std::nullopt;
  b.duration = duration;
  return b;
}

const TimesliceRecord& record(const SimulationResult& r, ns::TimesliceIndex t) {
  REQUIRE(r.records.timeslices.size() > t);
  REQUIRE(r.records.timeslices[t].timeslice == t);
  return r.records.timeslices[t];
}

}  // namespace

TEST_CASE("tsbench simulation: fluid ports share fairly or first come, first served", "[tsbench][simulation]") {
  // Two inputs send 1000 bytes each to one compute node whose port takes 1 byte/ns; the
  // out-ports could send 1 byte/ns each.
  for (const auto sharing : {PortSharing::fair, PortSharing::fifo}) {
    FluidNetwork net(2, 1, sharing);
    net.set_in_capacity(0, 1.0, 0ns);
    net.set_out_capacity(0, 1.0, 0ns);
    net.set_out_capacity(1, 1.0, 0ns);
    net.post(0, 0, 1000, 10, 0ns);
    net.post(1, 0, 1000, 11, 0ns);
    auto done = net.advance(5000ns);
    REQUIRE(done.size() == 2);
    if (sharing == PortSharing::fair) {  // half each: both finish at 2000 ns
      CHECK(net.current_rate(0) == 0.0);
      CHECK(done[0].finished == 2000ns);
      CHECK(done[1].finished == 2000ns);
    } else {  // the first gets all: 1000 ns, then the second: 2000 ns
      CHECK(done[0].tag == 10);
      CHECK(done[0].finished == 1000ns);
      CHECK(done[1].tag == 11);
      CHECK(done[1].started == 0ns);  // on the wire (holding its out-port) all along
      CHECK(done[1].finished == 2000ns);
    }
  }
  // A transfer capped by its out-port leaves the rest of the in-port to the other (fair).
  FluidNetwork net(2, 1, PortSharing::fair);
  net.set_in_capacity(0, 1.0, 0ns);
  net.set_out_capacity(0, 0.25, 0ns);
  net.post(0, 0, 1000, 0, 0ns);
  net.post(1, 0, 1000, 1, 0ns);
  CHECK(net.current_rate(0) == 0.25);
  CHECK(net.current_rate(1) == 0.75);
  // A transfer queued behind another on its out-port waits for it.
  net.post(1, 0, 750, 2, 0ns);
  CHECK(net.queued(1) == 1);
  const auto done = net.advance(10'000ns);
  REQUIRE(done.size() == 3);
  CHECK(done[0].tag == 1);
  CHECK(done[0].finished == 1334ns);  // 1000 / 0.75, rounded up to whole ns
  CHECK(done[1].tag == 2);
  CHECK(done[1].started == 1334ns);
}

TEST_CASE("tsbench simulation: the fluid network refuses bad arguments as Errc::invalid_option naming the value",
          "[tsbench][simulation][errors]") {
  using netio::test::check_invalid_option;
  check_invalid_option([] { (void)FluidNetwork(0, 2, PortSharing::fair); }, {"0 inputs and 2 computes"});
  FluidNetwork net(1, 1, PortSharing::fair);
  check_invalid_option([&] { net.set_in_capacity(0, 0.0, 0ns); }, {"in-port", "not 0"});
  check_invalid_option([&] { net.post(0, 3, 100, 0, 0ns); }, {"compute node 3", "there are 1"});
  (void)net.advance(500ns);
  check_invalid_option([&] { (void)net.advance(200ns); }, {"time runs backwards", "200 ns after 500 ns"});
}

TEST_CASE("tsbench simulation: 2 x 2 best-effort, time-slices complete when hand-computed", "[tsbench][simulation]") {
  // Offset round-robin: input 0 sends 0, 1, 2, 3 (compute 0, 1, 0, 1), input 1 sends 1, 0, 3, 2.
  // At any moment the two inputs send to different compute nodes, each at the full 1 byte/µs:
  // every contribution takes 1 ms, one after the other on each input's port.
  const auto r = simulate(small(2, 2), ns::Mode::best_effort, exact());
  REQUIRE(r.error.empty());
  REQUIRE(r.records.timeslices.size() == 8);
  // time-slice 0: input 0's first contribution (1 ms), input 1's second (2 ms)
  CHECK(record(r, 0).first_arrival == 1ms);
  CHECK(record(r, 0).last_arrival == 2ms);
  CHECK(record(r, 0).handed_over == 2ms);
  CHECK(record(r, 0).compute == 0);
  CHECK(record(r, 0).bytes == 2000);
  CHECK(record(r, 1).first_arrival == 1ms);
  CHECK(record(r, 1).last_arrival == 2ms);
  CHECK(record(r, 2).first_arrival == 3ms);
  CHECK(record(r, 2).last_arrival == 4ms);
  CHECK(record(r, 7).last_arrival == 8ms);
  for (const auto& t : r.records.timeslices) CHECK(t.complete);
  // Summarised like a socket run: spreads of 1 ms, 16 kB in 7 ms.
  const auto s = summarize(r.records);
  CHECK(s.timeslices == 8);
  CHECK(s.incomplete == 0);
  CHECK(s.spread_median_us == Approx(1000));
  CHECK(s.gbps == Approx(16000.0 * 8 / 7e6));
}

TEST_CASE("tsbench simulation: a compute port shared fairly or first come, first served", "[tsbench][simulation]") {
  // Two inputs, one compute node: every contribution of a round goes to the same port.
  SECTION("fair: both contributions of a time-slice arrive together, at half the rate") {
    const auto r = simulate(small(2, 1), ns::Mode::best_effort, exact(PortSharing::fair));
    REQUIRE(r.error.empty());
    CHECK(record(r, 0).first_arrival == 2ms);
    CHECK(record(r, 0).last_arrival == 2ms);
    CHECK(record(r, 1).first_arrival == 4ms);
    CHECK(record(r, 1).last_arrival == 4ms);
  }
  SECTION("fifo: one at a time, the other waits holding its input's port") {
    const auto r = simulate(small(2, 1), ns::Mode::best_effort, exact(PortSharing::fifo));
    REQUIRE(r.error.empty());
    CHECK(record(r, 0).first_arrival == 1ms);  // input 0
    CHECK(record(r, 0).last_arrival == 2ms);   // input 1, behind it
    // input 0's time-slice 1 reached the port at 1 ms, after input 1's time-slice 0 (0 ms)
    CHECK(record(r, 1).first_arrival == 3ms);
    CHECK(record(r, 1).last_arrival == 4ms);
  }
}

TEST_CASE("tsbench simulation: DFS runs on proposals and builds every time-slice", "[tsbench][simulation]") {
  auto b = small(3, 2);
  b.interval_timeslices = 20;
  b.timeslices = 600;
  b.emulate = "delay=lognormal:mean=50us,sigma=1,clip=1ms;in=80Mbps";
  b.fallback = false;   // pacing alone: the DDE's safety net would run some intervals best-effort
  SimulationOptions o;  // 5 µs base latency, clocks off by up to 1 ms, drifting by up to 20 ppm
  const auto r = simulate(b, ns::Mode::dfs, o);
  REQUIRE(r.error.empty());
  REQUIRE(r.records.timeslices.size() == 600);
  for (const auto& t : r.records.timeslices) CHECK(t.complete);
  // 30 intervals per input; once the DDE holds hist_cnt intervals every one has a proposal,
  // and the IEs start each interval together despite their clocks.
  REQUIRE(r.records.intervals.size() == 90);
  std::size_t proposed = 0;
  for (const auto& i : r.records.intervals) proposed += i.proposed_duration ? 1 : 0;
  CHECK(proposed >= 3 * 20);
  // (Unsynchronised, clocks off by up to ±1 ms would start a quarter of them over 1 ms apart.)
  std::vector<netio::scheduler::Duration> apart;
  for (const auto& i : r.records.intervals) {
    if (i.interval < 10 || i.input == 0) continue;
    const auto& first = r.records.intervals[i.interval];  // input 0's record of the same interval
    REQUIRE(first.interval == i.interval);
    apart.push_back(std::chrono::abs(i.actual_start - first.actual_start));
  }
  REQUIRE(apart.size() == 40);
  std::sort(apart.begin(), apart.end());
  CHECK(apart[20] < 200us);   // the median
  CHECK(apart.back() < 1ms);  // the most
}

TEST_CASE("tsbench simulation: a run that ends within a round builds every time-slice and finishes",
          "[tsbench][simulation]") {
  // 3 × 3, 3 credits, 601 time-slices: the last round holds 600 only. Inputs 1 and 2 send
  // their rounds from places 1 and 2 on: 601 and 602 come first, nobody pushed them, and
  // they are passed over (the run would otherwise wait for them to the end of model time).
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  CAPTURE(ns::to_string(mode));
  auto b = small(3, 3);
  b.buffer_bytes = 3 * 3 * 1000;
  b.interval_timeslices = 30;
  b.timeslices = 601;
  const auto r = simulate(b, mode, exact());
  REQUIRE(r.error.empty());
  REQUIRE(r.records.timeslices.size() == 601);
  for (const auto& t : r.records.timeslices) CHECK(t.complete);
}

TEST_CASE("tsbench simulation: an input's timers fire as late as --timer-late draws", "[tsbench][simulation]") {
  auto b = small(3, 2);
  b.interval_timeslices = 20;
  b.timeslices = 600;
  b.emulate = "in=80Mbps";
  b.fallback = false;  // pacing alone
  // How far each paced interval began after its proposed start (true time, exact clocks).
  auto late_starts = [&](const std::string& late) {
    SimulationOptions o = exact(PortSharing::fair, NetworkModel::ports);
    o.timer_late = parse_timer_late(late);
    const auto r = simulate(b, ns::Mode::dfs, o);
    REQUIRE(r.error.empty());
    std::vector<ns::Duration> after;
    for (const auto& i : r.records.intervals) {
      if (i.proposed_start) after.push_back(i.actual_start - *i.proposed_start);
    }
    REQUIRE(after.size() >= 3 * 15);
    std::sort(after.begin(), after.end());
    return after;
  };
  // On time: an input waiting for its start begins the interval at the proposed time.
  const auto on_time = late_starts("none");
  CHECK(on_time.front() >= 0ns);
  CHECK(on_time[on_time.size() / 2] == 0ns);
  // A timer 300 µs late: an interval that waited for its timer begins 300 µs after the
  // proposed start; one whose input an earlier event drives past the start (an
  // acknowledgement: once the proposals settle on what this exact network takes, the
  // previous interval's last one arrives at the very start) begins between.
  const auto late = late_starts("constant:300us");
  CHECK(late.front() >= 0ns);
  const auto timer_started = std::count(late.begin(), late.end(), ns::Duration{300us});
  CHECK(timer_started >= static_cast<std::ptrdiff_t>(late.size() / 8));
  CHECK(std::count(on_time.begin(), on_time.end(), ns::Duration{300us}) == 0);
  const auto mean = [](const std::vector<ns::Duration>& v) {
    return std::accumulate(v.begin(), v.end(), ns::Duration{0}) / static_cast<ns::Duration::rep>(v.size());
  };
  CHECK(mean(late) > mean(on_time) + 50us);
  CHECK_THROWS_AS(parse_timer_late("sometimes"), netio::Error);
}

TEST_CASE("tsbench simulation: the same seed gives the same run, another seed another", "[tsbench][simulation]") {
  auto b = small(3, 2);
  b.interval_timeslices = 20;
  b.timeslices = 400;
  b.emulate = "delay=lognormal:mean=50us,sigma=1,clip=1ms;in=80Mbps;seed=3";
  const auto same = [](const SimulationResult& x, const SimulationResult& y) {
    if (x.records.timeslices.size() != y.records.timeslices.size()) return false;
    for (std::size_t n = 0; n < x.records.timeslices.size(); ++n) {
      const auto& a = x.records.timeslices[n];
      const auto& c = y.records.timeslices[n];
      if (a.first_arrival != c.first_arrival || a.last_arrival != c.last_arrival || a.handed_over != c.handed_over) {
        return false;
      }
    }
    if (x.records.intervals.size() != y.records.intervals.size()) return false;
    for (std::size_t n = 0; n < x.records.intervals.size(); ++n) {
      if (x.records.intervals[n].actual_start != y.records.intervals[n].actual_start ||
          x.records.intervals[n].proposed_duration != y.records.intervals[n].proposed_duration) {
        return false;
      }
    }
    return true;
  };
  for (const auto mode : {ns::Mode::best_effort, ns::Mode::dfs}) {
    const auto a = simulate(b, mode, SimulationOptions{});
    const auto c = simulate(b, mode, SimulationOptions{});
    REQUIRE(a.error.empty());
    CHECK(same(a, c));
    CHECK(a.events == c.events);
    auto other = b;
    other.emulate = "delay=lognormal:mean=50us,sigma=1,clip=1ms;in=80Mbps;seed=4";
    const auto d = simulate(other, mode, SimulationOptions{});
    REQUIRE(d.error.empty());
    CHECK_FALSE(same(a, d));
  }
}

namespace {

// The ports model with buffers of exactly 1000 bytes on the wire (976 + the 24-byte header)
// through an in-port of 1 byte per µs whose bucket holds one buffer: a buffer leaves the port
// when the bucket has refilled since the one before, 1 ms apart.
BenchConfig on_ports(std::uint32_t inputs, std::uint32_t computes) {
  auto b = small(inputs, computes);
  b.contribution_bytes = 976;
  b.buffer_bytes = 2 * 976 * inputs;  // 2 credits per pair
  b.emulate = "in=8Mbps,burst=1000";
  b.timeslices = 6;
  return b;
}

}  // namespace

TEST_CASE("tsbench simulation: a shared port is fair between connections and keeps each one's order",
          "[tsbench][simulation]") {
  // 1 byte per ns, a bucket of 100 bytes; connection 1 brings three buffers, connection 2 one.
  const netio::RateLimit limit{1e9, 100};
  SECTION("fair: the buffer that finishes first byte by byte goes first") {
    SharedPort port(limit, {}, PortSharing::fair);
    port.arrive(1, 100, 10, 0ns);
    port.arrive(1, 100, 11, 0ns);
    port.arrive(1, 100, 12, 0ns);
    port.arrive(2, 100, 20, 0ns);
    std::vector<std::pair<std::uint32_t, ns::Time>> out;
    ns::Time now{0};
    while (const auto next = port.next_release(now)) {
      now = *next;
      out.emplace_back(port.release(now), now);
    }
    const std::vector<std::pair<std::uint32_t, ns::Time>> expected{{10, 0ns}, {20, 100ns}, {11, 200ns}, {12, 300ns}};
    CHECK(out == expected);
    CHECK(port.empty());
  }
  SECTION("fifo: in the order they came") {
    SharedPort port(limit, {}, PortSharing::fifo);
    port.arrive(1, 100, 10, 0ns);
    port.arrive(1, 100, 11, 0ns);
    port.arrive(2, 100, 20, 0ns);
    std::vector<std::uint32_t> out;
    ns::Time now{0};
    while (const auto next = port.next_release(now)) {
      now = *next;
      out.push_back(port.release(now));
    }
    CHECK(out == std::vector<std::uint32_t>{10, 11, 20});
    CHECK(now == 200ns);
  }
  SECTION("fifo with a priority lane: a control buffer passes those waiting, not the one released") {
    SharedPort port(limit, {}, PortSharing::fifo);
    port.arrive(1, 100, 10, 0ns);
    port.arrive(1, 100, 11, 0ns);
    std::vector<std::uint32_t> out{port.release(0ns)};  // 10 leaves at once (the bucket holds it)
    port.arrive(3, 10, 30, 0ns, true);                  // a control buffer behind 11
    ns::Time now{0};
    while (const auto next = port.next_release(now)) {
      now = *next;
      out.push_back(port.release(now));
    }
    // Without the lane: 10, 11 (at 100 ns), 30 (at 110 ns).
    CHECK(out == std::vector<std::uint32_t>{10, 30, 11});
    CHECK(now == 110ns);
  }
  SECTION("unlimited") { CHECK_FALSE(SharedPort<>().limited()); }
}

TEST_CASE("tsbench simulation: ports model, a compute port shared by two inputs' queues", "[tsbench][simulation]") {
  // Two inputs, one compute node, 2 credits each: both inputs hand over two contributions at
  // once (their hellos took 72 bytes of the bucket first), and the port passes one per ms.
  SECTION("fair: the inputs take turns, a time-slice's contributions 1 ms apart") {
    const auto r = simulate(on_ports(2, 1), ns::Mode::best_effort, exact(PortSharing::fair, NetworkModel::ports));
    REQUIRE(r.error.empty());
    CHECK(record(r, 0).first_arrival == 72us);   // input 0, once the bucket holds 1000 bytes again
    CHECK(record(r, 0).last_arrival == 1072us);  // input 1
    CHECK(record(r, 1).first_arrival == 2072us);
    CHECK(record(r, 1).last_arrival == 3072us);
    // time-slice 0 freed at 1.072 ms: both send time-slice 2, behind their time-slice 1
    CHECK(record(r, 2).first_arrival == 4072us);
    CHECK(record(r, 2).last_arrival == 5072us);
  }
  SECTION("fifo: input 0's two contributions first, then input 1's") {
    const auto r = simulate(on_ports(2, 1), ns::Mode::best_effort, exact(PortSharing::fifo, NetworkModel::ports));
    REQUIRE(r.error.empty());
    CHECK(record(r, 0).first_arrival == 72us);
    CHECK(record(r, 0).last_arrival == 2072us);
    CHECK(record(r, 1).first_arrival == 1072us);
    CHECK(record(r, 1).last_arrival == 3072us);
  }
}

TEST_CASE("tsbench simulation: ports model, an input sends to every compute node at once", "[tsbench][simulation]") {
  // Two inputs, two compute nodes: each compute port takes one buffer per ms. Every input
  // hands over all its credited contributions at once; each compute port takes the inputs'
  // in turn, so neither input waits behind the other's compute node.
  const auto r = simulate(on_ports(2, 2), ns::Mode::best_effort, exact(PortSharing::fair, NetworkModel::ports));
  REQUIRE(r.error.empty());
  // input 0 sends 0, 1, 2, 3; input 1 sends 1, 0, 3, 2 (offset round-robin); compute 0
  // takes time-slice 0 from input 0 (72 µs after both hellos), then from input 1 (1.072 ms).
  CHECK(record(r, 0).first_arrival == 72us);
  CHECK(record(r, 0).last_arrival == 1072us);
  CHECK(record(r, 1).first_arrival == 72us);
  CHECK(record(r, 1).last_arrival == 1072us);
  for (const auto& t : r.records.timeslices) CHECK(t.complete);
}

TEST_CASE("tsbench simulation: a late port release moves the delivery, not the port's schedule",
          "[tsbench][simulation]") {
  // As "a compute port shared by two inputs' queues" (fair): the port releases a buffer at
  // 72 µs, then one every ms (1.072, 2.072, ... ms), each after waiting for its bucket, so
  // each comes from the port's timer. The hellos (t = 0) pass a full bucket at once: not late.
  auto o = exact(PortSharing::fair, NetworkModel::ports);
  // Time-slice t's first and last contribution arrive at first + 2 t ms and last + 2 t ms.
  const auto arrive_at = [&](const char* late, ns::Duration first, ns::Duration last) {
    o.port_late = parse_port_late(late);
    const auto r = simulate(on_ports(2, 1), ns::Mode::best_effort, o);
    REQUIRE(r.error.empty());
    for (ns::TimesliceIndex t = 0; t < 6; ++t) {
      CHECK(record(r, t).first_arrival == first + t * 2ms);
      CHECK(record(r, t).last_arrival == last + t * 2ms);
    }
  };
  SECTION("300 us late: every contribution arrives 300 us later, the port keeps its slots") {
    arrive_at("constant:300us", 372us, 1372us);
  }
  SECTION("1.5 ms late, longer than a slot: the next release leaves with the late one") {
    // Released at 72 µs, late to 1.572 ms; the release at 1.072 ms (the bucket refilled
    // meanwhile) is before that, so it leaves then too; the one at 2.072 ms waits for its own
    // late timer, 3.572 ms. Each time-slice's two contributions arrive together, 2 ms apart:
    // the last at 11.572 ms, 11.072 + 0.5, not 12 x 1.5 ms later.
    arrive_at("constant:1500us", 1572us, 1572us);
  }
  SECTION("drawn: the same seed gives the same run, another seed another") {
    auto b = on_ports(2, 2);
    b.timeslices = 200;
    o.port_late = parse_port_late("lognormal:mean=800us,sigma=1,clip=5ms");
    const auto arrivals = [&](const std::string& spec) {
      b.emulate = spec;
      const auto r = simulate(b, ns::Mode::dfs, o);
      REQUIRE(r.error.empty());
      std::vector<std::pair<ns::Time, ns::Time>> out;
      for (const auto& t : r.records.timeslices) out.emplace_back(t.first_arrival, t.last_arrival);
      return out;
    };
    const auto a = arrivals("in=8Mbps,burst=1000;seed=5");
    CHECK(a == arrivals("in=8Mbps,burst=1000;seed=5"));
    CHECK(a != arrivals("in=8Mbps,burst=1000;seed=6"));
    auto on_time = o;
    on_time.port_late = netio::DelayDistribution{};
    b.emulate = "in=8Mbps,burst=1000;seed=5";
    const auto r = simulate(b, ns::Mode::dfs, on_time);
    REQUIRE(r.error.empty());
    std::vector<std::pair<ns::Time, ns::Time>> exact_arrivals;
    for (const auto& t : r.records.timeslices) exact_arrivals.emplace_back(t.first_arrival, t.last_arrival);
    CHECK(a != exact_arrivals);
    // Late, never early: every time-slice's last contribution arrives no sooner than on time.
    REQUIRE(a.size() == exact_arrivals.size());
    for (std::size_t n = 0; n < a.size(); ++n) CHECK(a[n].second >= exact_arrivals[n].second);
  }
  SECTION("refused by the lossless model, and a bad distribution named") {
    o.port_late = parse_port_late("constant:1us");
    o.network = NetworkModel::lossless;
    CHECK_THROWS_WITH(simulate(on_ports(2, 1), ns::Mode::best_effort, o), Catch::Contains("--port-late"));
    CHECK_THROWS_WITH(parse_port_late("sometimes"), Catch::Contains("--port-late 'sometimes'"));
  }
}

TEST_CASE("tsbench simulation: replies cross the network with their delay", "[tsbench][simulation]") {
  // One input, one compute node, 2 credits, a constant delay of 100 µs each way and a port
  // whose bucket holds back nothing: the hello arrives at 100 µs and its welcome at 200 µs;
  // time-slices 0 and 1 arrive at 300 µs, each complete on arrival; their credits are back
  // at 400 µs and time-slices 2 and 3 arrive at 500 µs. (With undelayed replies: 200, 300.)
  auto b = small(1, 1);
  b.contribution_bytes = 1000;
  b.buffer_bytes = 2000;
  b.emulate = "delay=constant:100us;in=1Gbps";
  for (const auto network : {NetworkModel::ports, NetworkModel::lossless}) {
    const auto r = simulate(b, ns::Mode::best_effort, exact(PortSharing::fair, network));
    REQUIRE(r.error.empty());
    if (network == NetworkModel::ports) {
      CHECK(record(r, 0).last_arrival == 300us);
      CHECK(record(r, 1).last_arrival == 300us);
      CHECK(record(r, 2).last_arrival == 500us);
      CHECK(record(r, 4).last_arrival == 700us);
    } else {
      // the fluid port sends at 1 Gb/s: 8 µs per contribution, one after the other
      CHECK(record(r, 0).last_arrival == 308us);
      CHECK(record(r, 1).last_arrival == 316us);
      CHECK(record(r, 2).last_arrival == 516us);  // time-slice 0's credit back at 408 µs
    }
  }
}

TEST_CASE("tsbench simulation: a core slower than the ports bounds the whole system", "[tsbench][simulation]") {
  // 2 x 2 with compute ports of 1 byte per µs and a core of as much, half of what the two
  // ports take: each contribution takes 1 ms at its compute port, and 1 ms in the core, which
  // every connection shares.
  auto b = on_ports(2, 2);
  b.timeslices = 20;
  auto o = exact(PortSharing::fair, NetworkModel::ports);
  const auto free = simulate(b, ns::Mode::best_effort, o);
  o.core = parse_core("8Mbps,burst=1000");
  const auto cored = simulate(b, ns::Mode::best_effort, o);
  REQUIRE(free.error.empty());
  REQUIRE(cored.error.empty());
  const auto last = [](const SimulationResult& r) {
    ns::Time latest{0};
    for (const auto& t : r.records.timeslices) latest = std::max(latest, t.last_arrival);
    return latest;
  };
  // 40 buffers: 20 ms through two ports, 40 ms through the one core
  CHECK(last(free) < 21ms);
  CHECK(last(cored) > 39ms);
  CHECK(last(cored) < 41ms);
  CHECK_THROWS_WITH(parse_core("fast"), Catch::Contains("--core 'fast'"));
  o.network = NetworkModel::lossless;
  CHECK_THROWS_WITH(simulate(b, ns::Mode::best_effort, o), Catch::Contains("--core"));
  o.core = {};
  o.network = NetworkModel::ports;
  o.control_lane = true;  // fair ports: no lane
  CHECK_THROWS_WITH(simulate(b, ns::Mode::best_effort, o), Catch::Contains("--control-lane"));
}

TEST_CASE("tsbench simulation: a run needs a capacity to model", "[tsbench][simulation]") {
  auto b = small(2, 2);
  b.emulate = "delay=50us";
  CHECK_THROWS_WITH(simulate(b, ns::Mode::best_effort, SimulationOptions{}), Catch::Contains("in= or out="));
  b.emulate = "none";
  CHECK_THROWS_WITH(simulate(b, ns::Mode::best_effort, SimulationOptions{}), Catch::Contains("--emulate"));
}

TEST_CASE("tsbench simulation: the event heap takes events out in the order of std::priority_queue",
          "[tsbench][simulation]") {
  // (time, sequence) as the simulator's events: few distinct times, so ties on the first key
  // are common; pushes and pops interleaved, the heap growing and shrinking.
  using Key = std::pair<std::uint32_t, std::uint64_t>;
  EventHeap<Key, std::less<Key>> heap;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> reference;
  std::mt19937_64 random(7);
  std::uint64_t sequence = 0;
  std::uint32_t now = 0;
  for (int step = 0; step < 20000; ++step) {
    const bool grow = step < 15000 ? random() % 3 != 0 : random() % 3 == 0;
    if (grow || reference.empty()) {
      const Key key{now + static_cast<std::uint32_t>(random() % 16), sequence++};
      heap.push(key);
      reference.push(key);
    } else {
      REQUIRE(heap.top() == reference.top());
      now = heap.top().first;
      heap.pop();
      reference.pop();
    }
    REQUIRE(heap.size() == reference.size());
  }
  while (!reference.empty()) {
    REQUIRE(heap.top() == reference.top());
    heap.pop();
    reference.pop();
  }
  CHECK(heap.empty());
}

TEST_CASE("tsbench simulation: the packed pool hands out the lowest free index and keeps the values",
          "[tsbench][simulation]") {
  PackedPool<std::uint64_t> pool;
  // 200 values (four words of indices), then every third freed, lowest first (1, 4, ..., 199):
  // a stack of free indices would hand out 199 next.
  for (std::uint32_t i = 0; i < 200; ++i) REQUIRE(pool.put(1000 + i) == i);
  std::vector<std::uint32_t> freed;
  for (std::uint32_t i = 1; i < 200; i += 3) {
    CHECK(pool.take(i) == 1000 + i);
    freed.push_back(i);
  }
  // Handed out again lowest first, across the words, then past the end.
  for (const std::uint32_t expected : freed) CHECK(pool.put(7) == expected);
  CHECK(pool.put(8) == 200);
  CHECK(pool[200] == 8);
  CHECK(pool[freed.front()] == 7);
  CHECK(pool[2] == 1002);  // never freed
  // A lower index freed before a higher one still comes back first.
  CHECK(pool.take(3) == 1003);
  CHECK(pool.take(150) == 1150);
  CHECK(pool.put(9) == 3);
  CHECK(pool.put(9) == 150);
  CHECK(pool.put(9) == 201);
}

TEST_CASE("tsbench simulation: one compute node at half speed, fixed against by load, by hand",
          "[tsbench][simulation]") {
  // 4 × 4, 1000-byte contributions, every compute port 8 Mb/s (a contribution per ms): a
  // node builds a time-slice per 4 ms, the system 1 per ms, 32 Mb/s. Compute node 0's port
  // at 50 % from the start: it can build one per 8 ms. Fixed, every node gets every 4th
  // time-slice, so the system runs at its pace: 4 × 4 Mb/s = 16 Mb/s. By load it can carry
  // 3.5 nodes' worth: 28 Mb/s.
  auto b = four_by_four(10s);
  b.warmup_intervals = 60;  // the first 2.4 s: the assignment settles
  b.slowdown = "node:4,at=0s,for=60s,rate=50%";
  const auto run = [&](ns::Assignment assignment) {
    b.assignment = assignment;
    const auto r = simulate(b, ns::Mode::best_effort, exact(PortSharing::fair, NetworkModel::ports));
    REQUIRE(r.error.empty());
    CHECK(r.assignment_mismatches == 0);      // the second coordinator decided the same
    return summarize(r.records).gbps * 1000;  // Mb/s
  };
  const double fixed = run(ns::Assignment::fixed);
  CHECK(fixed == Approx(16).epsilon(0.05));  // 15.5: the latency between the ports
  // 26.8 at this commit (0.96 of 28; 23.9, 0.85, with the Assigner's law before the search
  // for the slow node's share): the credits (4 per pair) leave the others' ports idle now
  // and then.
  const double by_load = run(ns::Assignment::load);
  CHECK(by_load >= 0.9 * 28);
  CHECK(by_load <= 28 * 1.01);
}

TEST_CASE("tsbench simulation: a compute node dies, its time-slices go to the others, by hand",
          "[tsbench][simulation]") {
  // 4 × 4, 1000-byte contributions, every compute port 8 Mb/s (a contribution per ms): the
  // compute ports are the bottleneck, 4 × 8 = 32 Mb/s. Compute node 2 dies at 3 s: every
  // input loses it at once and reroutes its time-slices (reroute(): one in three to each of
  // the others), so the three ports left carry it all: (M − 1)/M × 32 = 24 Mb/s. Nothing is
  // lost; what node 2 built but whose credits died with it is built again, with attempt 1.
  auto b = four_by_four(8s);
  b.fail = "compute:2,at=3s";
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  CAPTURE(ns::to_string(mode));
  const auto r = simulate(b, mode, exact(PortSharing::fair, NetworkModel::ports));
  REQUIRE(r.error.empty());
  const auto s = summarize(r.records);
  CHECK(s.lost == 0);
  CHECK(s.same_attempt == 0);    // a duplicate only with a higher attempt
  CHECK(s.duplicates <= 4 * 4);  // at most what node 2 held (its credits to every input)
  CHECK(s.reassigned > 0);
  CHECK(s.computes_failed == 1);
  CHECK(s.computes_lost == 1);
  CHECK(s.contributions_reassigned >= 4 * s.reassigned);
  // Before: 31 Mb/s (the latency between the ports costs a little, as in the slow-node case).
  CHECK(s.capacity_before_gbps * 1000 == Approx(32).epsilon(0.05));
  // After: the bytes handed over from 4 s to 7.5 s (recovered, before the run's end).
  std::uint64_t bytes = 0;
  for (const auto& t : r.records.timeslices) {
    if (t.handed_over >= ns::Time{4s} && t.handed_over < ns::Time{7500ms}) bytes += t.bytes;
  }
  const double after = static_cast<double>(bytes) * 8 / 3.5e6;  // Mb/s
  CHECK(after == Approx(24).epsilon(0.05));
  CHECK(s.recovery_ms < 1000);
}

TEST_CASE("tsbench simulation: the DDE's node dies, the replica on compute node 1 takes over, by hand",
          "[tsbench][simulation]") {
  // As above, but compute node 0 dies: it carries the first DDE replica (DFS's proposals) and
  // coordinator (assignment by load). The replica on compute node 1, fed the same reports all
  // along, answers the inputs from then on: the proposals and assignments go on, every input
  // keeps sending until the run's end, and nothing is lost.
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  const auto assignment = GENERATE(ns::Assignment::fixed, ns::Assignment::load);
  if (mode == ns::Mode::best_effort && assignment == ns::Assignment::fixed) return;  // no DDE: the case above
  CAPTURE(ns::to_string(mode), assignment == ns::Assignment::load);
  const auto run = [&](const char* fail) {
    auto b = four_by_four(8s);
    b.fail = fail;
    b.assignment = assignment;
    auto r = simulate(b, mode, exact(PortSharing::fair, NetworkModel::ports));
    REQUIRE(r.error.empty());
    return r;
  };
  const auto r = run("compute:0,at=3s");
  const auto s = summarize(r.records);
  CHECK(s.lost == 0);
  CHECK(s.same_attempt == 0);
  CHECK(s.computes_failed == 1);
  CHECK(s.dde_replicas_lost == std::vector<ns::ComputeIndex>{0});
  // 5 s after the failure at 40 time-slices an interval, 18 to 24 Mb/s: about 70 intervals
  // or more, each input taking a proposal (DFS) and an assignment (load) for each.
  if (mode == ns::Mode::dfs) CHECK(s.proposals_after_failure >= 4 * 60);
  const auto intervals = *r.records.expected_timeslices / 40;
  if (assignment == ns::Assignment::load) {
    CHECK(s.assignments_after_failure >= 4 * 60);
    REQUIRE(s.assignment.has_value());
    CHECK(s.assignment->interval + 1 >= intervals);  // every interval of the run decided
    CHECK(s.assignment->shares[0] == 0);
  }
  // The bytes handed over from 4 s to 7.5 s (recovered, before the run's end), Mb/s.
  const auto after = [](const SimulationResult& result) {
    std::uint64_t bytes = 0;
    for (const auto& t : result.records.timeslices) {
      if (t.handed_over >= ns::Time{4s} && t.handed_over < ns::Time{7500ms}) bytes += t.bytes;
    }
    return static_cast<double>(bytes) * 8 / 3.5e6;
  };
  if (assignment == ns::Assignment::fixed) {
    // By hand, as above: 32 Mb/s before, the three ports left carry (M − 1)/M × 32 = 24 after.
    CHECK(s.capacity_before_gbps * 1000 == Approx(32).epsilon(0.05));
    CHECK(after(r) == Approx(24).epsilon(0.05));
    CHECK(s.recovery_ms < 1000);
  } else {
    // By load (4 credits per pair, intervals of 10 rounds) the system carries less than its
    // ports before any failure (the assigner's, not the failover's); losing the DDE's node
    // costs no more than losing another node: compute node 2's failure, compared (at this
    // commit best-effort 18.4 against 18.2 Mb/s, DFS 21.6 against 20.0, of 22.2 and 29.3 before).
    const auto other = run("compute:2,at=3s");
    CHECK(summarize(other.records).lost == 0);
    CHECK(after(r) >= 0.95 * after(other));
  }
}

namespace {

// The 4 × 4 `b` with compute node 2 drained (or slot 3 joining) at 3 s: nothing lost, built
// twice or reassigned, no node lost, the change counted.
SimulationResult membership_run(BenchConfig b, bool join, ns::Mode mode) {
  (join ? b.join : b.drain) = join ? "compute,at=3s" : "compute:2,at=3s";
  auto r = simulate(b, mode, exact(PortSharing::fair, NetworkModel::ports));
  REQUIRE(r.error.empty());
  const auto s = summarize(r.records);
  CHECK(s.lost == 0);
  CHECK(s.duplicates == 0);
  CHECK(s.reassigned == 0);
  CHECK(s.computes_lost == 0);
  CHECK(s.computes_drained == (join ? 0u : 1u));
  CHECK(s.computes_joined == (join ? 1u : 0u));
  return r;
}

}  // namespace

TEST_CASE("tsbench simulation: a compute node drains, another joins, against the capacity by hand",
          "[tsbench][simulation]") {
  // 4 × 4 as above: every compute port 8 Mb/s, the ports the bottleneck. Drained at 3 s,
  // compute node 2 names a boundary; from it on its time-slices go to the other three (one
  // in three each), attempt 0: (M − 1)/M × 32 = 24 Mb/s after, 32 before. Joining at 3 s,
  // slot 3 (out from the start: 24 Mb/s before) takes its own time-slices from the boundary
  // member 0 names: 32 Mb/s after. Nothing lost, nothing built twice or reassigned.
  auto b = four_by_four(8s);
  const bool join = GENERATE(false, true);
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  CAPTURE(join, ns::to_string(mode));
  const auto r = membership_run(b, join, mode);
  const auto s = summarize(r.records);
  CHECK(s.membership_before_gbps * 1000 == Approx(join ? 24 : 32).epsilon(0.05));
  // After: from 1 s after the change (the boundary is one or two intervals ahead) to 7.5 s.
  std::uint64_t bytes = 0;
  for (const auto& t : r.records.timeslices) {
    if (t.handed_over >= ns::Time{4s} && t.handed_over < ns::Time{7500ms}) bytes += t.bytes;
  }
  CHECK(static_cast<double>(bytes) * 8 / 3.5e6 == Approx(join ? 32 : 24).epsilon(0.05));
  std::uint64_t on_slot = 0;
  for (const auto& t : r.records.timeslices) on_slot += t.compute == (join ? 3u : 2u) ? 1 : 0;
  CHECK(on_slot > 0);
  if (join) CHECK(s.joined_first_ms < 1000);
}

TEST_CASE("tsbench simulation: under assignment by load a compute node drains, another joins, by hand",
          "[tsbench][simulation]") {
  // As above, 4 × 4, intervals of 40 time-slices, every compute port 8 Mb/s, but the
  // coordinator names the boundary: the node asks every input at 3 s, the inputs flag it in
  // their load reports, and one decision names the change at its interval's first time-slice.
  // By hand: a drained node 2 gets 0 from that decision on, so it builds only below the
  // boundary and the three ports left carry at most 3/4 × 32 = 24 Mb/s; slot 3 (out from the
  // start: no share) joins with a fair share at once, 40 / 4 = 10, and builds only from the
  // boundary on; its first time-slice within 1 s (the boundary is 2 to 3 intervals of about
  // 40 ms after the request). Nothing lost, built twice or reassigned. (How much the others
  // carry after is the assigner's law, as in the failure case above: under best-effort it
  // cuts two nodes of this system to half a share before any change, so no lower bound here.)
  auto b = four_by_four(8s);
  b.assignment = ns::Assignment::load;
  const bool join = GENERATE(false, true);
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  CAPTURE(join, ns::to_string(mode));
  const auto r = membership_run(b, join, mode);
  const auto s = summarize(r.records);
  const ns::ComputeIndex slot = join ? 3 : 2;
  // The one decision that names the change, and the slot's share before and after it.
  std::optional<ns::TimesliceIndex> boundary;
  for (const auto& a : r.records.assignments) {
    CAPTURE(a.interval);
    if (!a.changes.empty()) {
      CHECK_FALSE(boundary);
      CHECK(a.changes == std::vector<ns::MembershipChange>{{slot, join, a.interval * 40}});
      boundary = a.interval * 40;
      CHECK(a.shares[slot] == (join ? 10u : 0u));
      if (join) CHECK(a.shares == std::vector<std::uint32_t>{10, 10, 10, 10});
    } else if (!join && boundary) {
      CHECK(a.shares[slot] == 0);
    } else if (join && !boundary) {
      CHECK(a.shares[slot] == 0);
    }
  }
  REQUIRE(boundary);
  std::uint64_t on_slot = 0;
  for (const auto& t : r.records.timeslices) {
    if (t.compute != slot) continue;
    ++on_slot;
    CHECK((join ? t.timeslice >= *boundary : t.timeslice < *boundary));
  }
  CHECK(on_slot > 0);
  if (join) CHECK(s.joined_first_ms < 1000);
  // After: the bytes handed over from 4 s to 7.5 s, at most what the member ports carry.
  std::uint64_t bytes = 0;
  for (const auto& t : r.records.timeslices) {
    if (t.handed_over >= ns::Time{4s} && t.handed_over < ns::Time{7500ms}) bytes += t.bytes;
  }
  CHECK(static_cast<double>(bytes) * 8 / 3.5e6 <= (join ? 32 : 24) * 1.05);
}

namespace {

// The 4 x 4 of the two input-join cases below: the inputs' ports the bottleneck, 8 Mb/s each,
// input 3 on standby and joining at 3 s.
SimulationResult simulate_input_join(ns::Assignment assignment, ns::Mode mode) {
  auto b = four_by_four(8s);
  b.emulate = "out=8Mbps";
  b.join = "input,at=3s";
  b.assignment = assignment;
  return simulate(b, mode, exact(PortSharing::fair, NetworkModel::ports));
}

// Its outcome: input 3 joined, nothing lost, built twice or incomplete; every time-slice once
// and complete, 3 contributions (3000 bytes) below `from` and 4 from it on; 24 Mb/s in the 2 s
// before the join, 32 from 4 s to 7.5 s.
void check_input_join_run(const SimulationResult& r, const RunSummary& s, ns::TimesliceIndex from) {
  CHECK(s.lost == 0);
  CHECK(s.duplicates == 0);
  CHECK(s.incomplete == 0);
  CHECK(s.inputs_joined == 1);
  REQUIRE(r.records.expected_timeslices);
  REQUIRE(r.records.timeslices.size() == *r.records.expected_timeslices);
  std::uint64_t wrong = 0;
  for (ns::TimesliceIndex t = 0; t < r.records.timeslices.size(); ++t) {
    const auto& rec = r.records.timeslices[t];
    if (rec.timeslice != t || !rec.complete || rec.bytes != (t < from ? 3000u : 4000u)) ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(r.records.timeslices.size() > from + 1000);
  CHECK(s.membership_before_gbps * 1000 == Approx(24).epsilon(0.05));
  std::uint64_t bytes = 0;
  for (const auto& t : r.records.timeslices) {
    if (t.handed_over >= ns::Time{4s} && t.handed_over < ns::Time{7500ms}) bytes += t.bytes;
  }
  CHECK(static_cast<double>(bytes) * 8 / 3.5e6 == Approx(32).epsilon(0.05));
}

}  // namespace

TEST_CASE("tsbench simulation: a standby input joins at the boundary compute node 0 names, by hand",
          "[tsbench][simulation]") {
  // 4 × 4, 1000-byte contributions, every node's out-port 8 Mb/s and nothing else shaped: the
  // inputs' ports are the bottleneck, 8 Mb/s each. Input 3 is on standby from the start: 3 × 8
  // = 24 Mb/s, time-slices of 3 contributions (3000 bytes). At 3 s it asks compute node 0,
  // which names T, the first interval start (40 time-slices) from H + (credits + 2) × M =
  // H + 6 × 4 (H: the highest time-slice it received by then); from T on every time-slice has
  // 4 contributions (4000 bytes), 4 × 8 = 32 Mb/s. Nothing lost, built twice or incomplete;
  // DFS: the DDE counts the joiner from T's interval (its history would wait for the joiner's
  // reports below it, or refuse them) and paces it.
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  CAPTURE(ns::to_string(mode));
  const auto r = simulate_input_join(ns::Assignment::fixed, mode);
  INFO(r.error);
  REQUIRE(r.error.empty());
  const auto s = summarize(r.records);
  CHECK(s.reassigned == 0);
  CHECK(s.computes_lost == 0);
  const auto from = s.input_join_from;
  // T by hand from what compute node 0 had received when the request came: at 3 s exactly (no
  // latency, and the joiner's port idle). The joiner's first contributions, from T on, arrive
  // at that very moment too (its idle port's burst), after T was named: not counted.
  ns::TimesliceIndex received = 0;
  for (const auto& t : r.records.timeslices) {
    if (t.compute == 0 && t.first_arrival < ns::Time{3s}) received = std::max(received, t.timeslice);
  }
  CHECK(from == (received + 6 * 4 + 39) / 40 * 40);
  // 3 s at 24 Mb/s of 3000-byte time-slices: about 3000 built by then.
  CHECK(from > 2800);
  CHECK(from < 3200);
  check_input_join_run(r, s, from);
  if (mode == ns::Mode::dfs) {
    // The joiner's intervals start at T's; the DDE proposed for them (it counts the joiner).
    std::uint64_t joiner_intervals = 0, joiner_paced = 0;
    for (const auto& i : r.records.intervals) {
      if (i.input != 3) continue;
      CHECK(i.interval >= from / 40);
      ++joiner_intervals;
      joiner_paced += i.proposed_start ? 1 : 0;
    }
    CHECK(joiner_intervals > 50);
    CHECK(joiner_paced > joiner_intervals / 2);
  }
}

TEST_CASE(
    "tsbench simulation: under assignment by load a standby input joins at the boundary a decision names, "
    "by hand",
    "[tsbench][simulation]") {
  // The system above (the inputs' ports the bottleneck: 24 Mb/s with 3 inputs, 32 with 4), but
  // the coordinator names T: input 3 asks both DDE replicas at 3 s, they pass the request on to
  // every input, which flag it in their load reports, and the one decision for interval k from
  // the reports of k - 2 names {3, k × 40}; every input takes it before sending into k, the
  // joiner starts there. At about 1000 time-slices a second an interval lasts 40 ms, so T is
  // 2 to 4 intervals past what was sent at 3 s: between 2800 and 3400. Nothing lost, built
  // twice or incomplete; below T 3 contributions, from T on 4.
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  CAPTURE(ns::to_string(mode));
  const auto r = simulate_input_join(ns::Assignment::load, mode);
  INFO(r.error);
  REQUIRE(r.error.empty());
  const auto s = summarize(r.records);
  std::optional<ns::TimesliceIndex> named;
  for (const auto& a : r.records.assignments) {
    if (a.input_joins.empty()) continue;
    CAPTURE(a.interval);
    CHECK_FALSE(named);  // one decision names it
    CHECK(a.input_joins == std::vector<ns::InputJoinChange>{{3, a.interval * 40}});
    named = a.interval * 40;
  }
  REQUIRE(named);
  const auto from = s.input_join_from;
  CHECK(from == *named);
  CHECK(from > 2800);
  CHECK(from < 3400);
  check_input_join_run(r, s, from);
}
