// SPDX-License-Identifier: MIT
// The pure shaping parts of the emulated network, driven by an injected clock (no sleeping):
// token buckets keep their rate exactly, a shared node capacity splits fairly between
// concurrent senders, slow-down windows start and end on time, and the delay stage keeps the
// order of a connection's buffers.
#include "backends/emulated/link_shaper.hpp"
#include "netio/emulated/shared_capacity.hpp"
#include "netio/emulated/slowdown_schedule.hpp"
#include "netio/emulated/token_bucket.hpp"
#include "netio/emulation.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <vector>

using namespace std::chrono_literals;
using netio::parse_emulation_spec;
using netio::RateLimit;
using netio::emulated::LinkShaper;
using netio::emulated::Nanos;
using netio::emulated::SharedCapacity;
using netio::emulated::SlowdownSchedule;
using netio::emulated::TokenBucket;

namespace {

constexpr Nanos t0 = 1000s;  // any origin: the pure parts take the time they are given

// Bytes released per slot of `slot`, per flow, when `flows` senders keep a buffer of `bytes`
// waiting at all times for `span`: what a receiving node's in= port hands up.
std::map<std::uint64_t, std::vector<double>> run_shared(SharedCapacity& capacity, int flows, std::size_t bytes,
                                                        Nanos span, Nanos slot) {
  std::map<std::uint64_t, std::vector<double>> per_slot;
  const auto slots = static_cast<std::size_t>(span / slot);
  for (int f = 1; f <= flows; ++f) {
    per_slot[f].assign(slots, 0);
    capacity.enqueue(f, bytes);
  }
  Nanos now = t0;
  while (true) {
    const Nanos at = capacity.next_release_time(now);
    now = std::max(now, at);  // the clock jumps to the next release: nothing sleeps
    if (now >= t0 + span) break;
    const auto flow = capacity.release(now);
    per_slot[flow][static_cast<std::size_t>((now - t0) / slot)] += static_cast<double>(bytes);
    capacity.enqueue(flow, bytes);  // always backlogged
  }
  return per_slot;
}

}  // namespace

TEST_CASE("a token bucket keeps its rate exactly, whatever the buffer sizes", "[emulated]") {
  const RateLimit limit{1e9 / 8 /* 1 Gb/s */, 64 * 1024};
  TokenBucket bucket(limit, {}, t0);
  for (const std::size_t bytes : {std::size_t{1500}, std::size_t{1} << 20}) {
    Nanos now = t0 + 10s;
    bucket.reconfigure(limit, {}, now);
    double sent = 0;
    const Nanos end = now + 1s;
    while (true) {
      now = bucket.ready_at(now, bytes);
      if (now >= end) break;
      bucket.consume(now, bytes);
      sent += static_cast<double>(bytes);
    }
    INFO(bytes << " B buffers");
    // One second at 1 Gb/s, plus at most the burst it started with, minus one buffer.
    CHECK(sent >= 125e6 - static_cast<double>(bytes));
    CHECK(sent <= 125e6 + 64 * 1024 + static_cast<double>(bytes));
  }
}

TEST_CASE("a shared incoming capacity splits evenly between concurrent senders", "[emulated]") {
  const auto config = parse_emulation_spec("in=10Gbps,burst=64KiB");
  SharedCapacity capacity(config.node_in, {}, t0);
  const auto per_slot = run_shared(capacity, 4, 64 * 1024, 1s, 100ms);
  double total = 0;
  for (const auto& [flow, slots] : per_slot) {
    for (std::size_t s = 0; s < slots.size(); ++s) {
      INFO("flow " << flow << ", slot " << s);
      // 10 Gb/s over 100 ms is 125 MB; a quarter each, within one buffer or two.
      CHECK(slots[s] == Approx(125e6 / 4).margin(2 * 64 * 1024));
      total += slots[s];
    }
  }
  CHECK(total == Approx(1.25e9).margin(128 * 1024));
}

TEST_CASE("flows with different buffer sizes share by bytes, and a late flow gets no back pay", "[emulated]") {
  SharedCapacity capacity(RateLimit{1e6, 1000}, {}, t0);
  const std::map<std::uint64_t, std::size_t> sizes{{1, 100}, {2, 1000}, {3, 500}};
  std::map<std::uint64_t, double> before, after;  // bytes served before and after flow 3 joins
  capacity.enqueue(1, 100);
  capacity.enqueue(2, 1000);
  Nanos now = t0;
  for (int i = 0; i < 40'000; ++i) {
    now = std::max(now, capacity.next_release_time(now));
    const auto flow = capacity.release(now);
    (i < 20'000 ? before : after)[flow] += static_cast<double>(sizes.at(flow));
    capacity.enqueue(flow, sizes.at(flow));
    if (i == 20'000) capacity.enqueue(3, 500);  // idle so far: starts level with the others, not ahead
  }
  CHECK(before[1] == Approx(before[2]).epsilon(0.01));
  CHECK(after[3] == Approx(after[1]).epsilon(0.01));
  CHECK(after[3] == Approx(after[2]).epsilon(0.01));
}

TEST_CASE("a small buffer from an idle flow passes the large ones waiting, as packets interleave at a switch",
          "[emulated]") {
  // 1 MB/s, a bucket of one byte: a 16,000-byte buffer holds the port 16 ms.
  SharedCapacity capacity(RateLimit{1e6, 1}, {}, t0);
  for (std::uint64_t flow = 1; flow <= 3; ++flow) capacity.enqueue(flow, 16'000);
  CHECK(capacity.release(t0) == 1);
  // Flows 2 and 3 start at 0 and finish at 16,000; flow 1's next buffer starts at 16,000.
  // The 64 bytes of an idle flow start level with the least-served waiting (0) and finish at
  // 64: first, where a pick by start (by bytes served) would put them after flows 2 and 3.
  capacity.enqueue(9, 64);
  capacity.enqueue(1, 16'000);
  Nanos now = t0;
  std::vector<std::uint64_t> order;
  while (!capacity.empty()) {
    now = std::max(now, capacity.next_release_time(now));
    order.push_back(capacity.release(now));
  }
  CHECK(order == std::vector<std::uint64_t>{9, 2, 3, 1});
}

TEST_CASE("a removed flow leaves at once, and its number comes back as a new flow", "[emulated]") {
  // 1 MB/s, a bucket of one byte; flows are numbered densely by the caller.
  SharedCapacity capacity(RateLimit{1e6, 1}, {}, t0);
  for (SharedCapacity::FlowId flow = 0; flow < 4; ++flow) capacity.enqueue(flow, 1000);
  CHECK(capacity.release(t0) == 0);  // ties: the one waiting longest
  CHECK(capacity.release(t0) == 1);  // flow 1 has finished at 1000
  capacity.remove(1);
  capacity.remove(3);  // waiting: its buffer goes with it
  CHECK_FALSE(capacity.waiting(3));
  capacity.enqueue(0, 1000);  // backlogged: starts at 1000, finishes at 2000
  // Number 1 again, a new flow: no history, so it starts level with the least-served waiting
  // buffer (flow 2's, at 0) and its 10 bytes finish first (flow 1's history would start it at 1000).
  capacity.enqueue(1, 10);
  Nanos now = t0;
  std::vector<SharedCapacity::FlowId> order;
  while (!capacity.empty()) {
    now = std::max(now, capacity.next_release_time(now));
    order.push_back(capacity.release(now));
  }
  CHECK(order == std::vector<SharedCapacity::FlowId>{1, 2, 0});
}

TEST_CASE("a slow-down window starts and ends on time", "[emulated]") {
  const auto config = parse_emulation_spec("in=8Gbps,burst=64KiB;slowdown=node,at=300ms,for=400ms,rate=25%");
  const SlowdownSchedule schedule(SlowdownSchedule::node_windows(config), t0);
  CHECK(schedule.rate_factor(t0 + 299ms) == 1);
  CHECK(schedule.rate_factor(t0 + 300ms) == 0.25);
  CHECK(schedule.rate_factor(t0 + 699ms) == 0.25);
  CHECK(schedule.rate_factor(t0 + 700ms) == 1);
  CHECK(*schedule.next_change_after(t0) == t0 + 300ms);
  CHECK(*schedule.next_change_after(t0 + 300ms) == t0 + 700ms);
  CHECK_FALSE(schedule.next_change_after(t0 + 700ms));

  SharedCapacity capacity(config.node_in, schedule, t0);
  const auto per_slot = run_shared(capacity, 2, 16 * 1024, 1s, 100ms);
  for (std::size_t s = 0; s < 10; ++s) {
    double slot_total = 0;
    for (const auto& [flow, slots] : per_slot) slot_total += slots[s];
    INFO("slot " << s);
    const bool slow = s >= 3 && s < 7;
    // 8 Gb/s is 100 MB per 100 ms slot; a quarter of it inside the window.
    CHECK(slot_total ==
          Approx(slow ? 25e6 : 100e6).margin(64 * 1024 + 2 * 16 * 1024));  // the first slot starts with a full bucket
  }
}

TEST_CASE("repeating windows, node:ID windows only on that node, link windows only on that link", "[emulated]") {
  const auto config = parse_emulation_spec(
      "node=3;rate=1Gbps;slowdown=node:2,at=0s,for=1s,rate=10%;slowdown=node:3,at=1s,for=100ms,every=1s,rate=50%;"
      "slowdown=link:10.0.0.1:7000,at=0s,for=1s,delay=5ms");
  const SlowdownSchedule node(SlowdownSchedule::node_windows(config), t0);
  CHECK(node.rate_factor(t0 + 500ms) == 1);  // node:2 is not this node
  CHECK(node.rate_factor(t0 + 1050ms) == 0.5);
  CHECK(node.rate_factor(t0 + 1150ms) == 1);
  CHECK(node.rate_factor(t0 + 5050ms) == 0.5);
  CHECK(*node.next_change_after(t0 + 2050ms) == t0 + 2100ms);
  const SlowdownSchedule link(SlowdownSchedule::link_windows(config, "10.0.0.1", 7000), t0);
  CHECK(link.extra_delay(t0 + 500ms) == 5ms);
  const SlowdownSchedule other(SlowdownSchedule::link_windows(config, "10.0.0.1", 7001), t0);
  CHECK(other.extra_delay(t0 + 500ms) == 0ms);
}

TEST_CASE("the delay stage keeps a connection's order under random per-buffer delays", "[emulated]") {
  const auto config = parse_emulation_spec("delay=exponential:mean=50us;seed=3");
  LinkShaper shaper(config, {}, t0, 0, t0);
  Nanos now = t0;
  Nanos previous = Nanos::min();
  int later_draws = 0;
  for (int i = 0; i < 10'000; ++i) {
    now += 5us;  // sent faster than the mean delay: draws often want to overtake
    const Nanos due = shaper.admit(now);
    CHECK(due >= previous);
    CHECK(due >= now);
    if (due > now) ++later_draws;
    previous = due;
  }
  CHECK(later_draws > 9000);
}

TEST_CASE("the delay stage adds a slow-down's extra delay inside its window only", "[emulated]") {
  const auto config = parse_emulation_spec("delay=10us;slowdown=node,at=1s,for=1s,delay=1ms");
  LinkShaper shaper(config, SlowdownSchedule::node_windows(config), t0, 0, t0);
  CHECK(shaper.admit(t0 + 500ms) == t0 + 500ms + 10us);
  CHECK(shaper.admit(t0 + 1500ms) == t0 + 1500ms + 1010us);
  CHECK(shaper.admit(t0 + 2500ms) == t0 + 2500ms + 10us);
}
