// SPDX-License-Identifier: MIT
// The pure logic of the scheduled-push nodes (scheduler/input_node, compute_node): credits
// gating sends in offset round-robin order, DFS acknowledgements, a lost compute node's
// time-slices skipped without blocking the IE, and in-order hand-over with give-ups.
#include "netio/error.hpp"
#include "netio/scheduler/compute_node.hpp"
#include "netio/scheduler/input_node.hpp"

#include <catch2/catch.hpp>

using namespace netio::scheduler;
using What = InputNode::Next::What;
using namespace std::chrono_literals;

namespace {

SchedulerConfig config_3x3() {
  SchedulerConfig config;
  config.input_count = 3;
  config.compute_count = 3;
  config.timeslices_per_interval = 6;  // two rounds
  config.history_length = 2;
  return config;
}

}  // namespace

TEST_CASE("A best-effort input node sends in round-robin order as credits allow", "[scheduled_push]") {
  InputNode node(config_3x3(), 1, Mode::best_effort);
  // Nothing granted yet: the first contribution (t = 1, input 1 starts at compute node 1) waits.
  auto next = node.next(0ns);
  CHECK(next.what == What::wait_for_credit);
  CHECK(next.timeslice == 1);
  CHECK(next.compute == 1);
  node.grant(0, 1);
  node.grant(1, 1);
  node.grant(2, 1);
  for (TimesliceIndex t : {1, 2, 0}) {
    next = node.next(0ns);
    REQUIRE(next.what == What::send);
    CHECK(next.timeslice == t);
    node.on_sent(t, 0ns);
  }
  next = node.next(0ns);
  CHECK(next.what == What::wait_for_credit);  // t = 4 to compute 1: its one credit is out
  CHECK(next.timeslice == 4);
  node.on_credit(1);
  CHECK(node.next(0ns).what == What::send);
  CHECK_THROWS_AS(node.on_credit(0, 2), netio::Error);    // more than granted
  CHECK_THROWS_AS(node.grant(0, 1), netio::Error);        // granted twice
  CHECK_FALSE(node.on_acknowledged(1, 0ns).has_value());  // best-effort ignores acknowledgements
}

TEST_CASE("An input node skips a lost compute node's time-slices and its IE does not block", "[scheduled_push]") {
  InputNode node(config_3x3(), 0, Mode::dfs);
  for (ComputeIndex c = 0; c < 3; ++c) node.grant(c, 4);
  // Interval 0: t = 0..5, no proposal yet: all best-effort.
  for (TimesliceIndex t = 0; t < 6; ++t) {
    const auto next = node.next(0ns);
    REQUIRE(next.what == What::send);
    REQUIRE(next.timeslice == t);
    node.on_sent(t, 0ns);
  }
  // Acknowledgements from compute 0 and 1 only; compute 2 (t = 2, 5) then dies.
  for (TimesliceIndex t : {0, 1, 3, 4}) CHECK_FALSE(node.on_acknowledged(t, 1000ns).has_value());
  CHECK(node.next(1000ns).what == What::wait_for_acknowledgements);
  const auto completions = node.on_compute_lost(2, 2000ns);
  REQUIRE(completions.size() == 1);  // interval 0 ends: its report goes out
  CHECK(completions[0].report.interval == 0);
  CHECK(completions[0].request.interval == 2);
  CHECK(node.lost(2));
  // Interval 1: t = 6, 7 go out, t = 8 (compute 2) is skipped, counted as acknowledged.
  for (TimesliceIndex t : {6, 7}) {
    REQUIRE(node.next(2000ns).what == What::send);
    node.on_sent(t, 2000ns);
  }
  const auto skip = node.next(2000ns);
  CHECK(skip.what == What::skip);
  CHECK(skip.timeslice == 8);
  CHECK_FALSE(node.on_skipped(8, 2000ns).has_value());
  CHECK_THROWS_AS(node.on_acknowledged(8, 2000ns), netio::Error);  // skipped: not outstanding
}

TEST_CASE("A DFS input node matches acknowledgements out of order, credits returned before them, and a loss",
          "[scheduled_push]") {
  SchedulerConfig config = config_3x3();
  config.timeslices_per_interval = 12;  // four rounds: t = 0..11 in interval 0, compute node t % 3
  InputNode node(config, 0, Mode::dfs);
  auto send = [&](TimesliceIndex t) {
    const auto next = node.next(0ns);
    REQUIRE(next.what == What::send);
    REQUIRE(next.timeslice == t);
    node.on_sent(t, 0ns);
  };
  for (ComputeIndex c = 0; c < 3; ++c) node.grant(c, 2);
  for (TimesliceIndex t = 0; t < 6; ++t) send(t);  // two outstanding at each compute node
  CHECK(node.next(0ns).what == What::wait_for_credit);
  CHECK_FALSE(node.on_acknowledged(0, 1000ns).has_value());
  // Credits back before the acknowledgements they follow: more outstanding than granted.
  for (ComputeIndex c = 0; c < 3; ++c) node.on_credit(c);
  for (TimesliceIndex t : {6, 7, 8}) send(t);
  node.on_credit(0);
  send(9);                                                         // compute node 0: 3, 6, 9 outstanding
  CHECK_FALSE(node.on_acknowledged(6, 1000ns).has_value());        // not the oldest
  CHECK_THROWS_AS(node.on_acknowledged(6, 1000ns), netio::Error);  // twice
  CHECK_FALSE(node.on_acknowledged(4, 1000ns).has_value());        // compute node 1: 1, 4, 7
  // Compute node 0 dies: 3 and 9 count as acknowledged, the interval still misses others.
  CHECK(node.on_compute_lost(0, 2000ns).empty());
  CHECK_THROWS_AS(node.on_acknowledged(3, 2000ns), netio::Error);   // no longer outstanding
  CHECK_THROWS_AS(node.on_acknowledged(10, 2000ns), netio::Error);  // not sent
  for (TimesliceIndex t : {1, 7, 2, 5, 8}) CHECK_FALSE(node.on_acknowledged(t, 3000ns).has_value());
  node.on_credit(1);
  node.on_credit(2);
  send(10);
  send(11);
  CHECK_FALSE(node.on_acknowledged(11, 4000ns).has_value());
  const auto done = node.on_acknowledged(10, 4000ns);  // the last of interval 0
  REQUIRE(done.has_value());
  CHECK(done->report.interval == 0);
}

TEST_CASE("A compute node hands time-slices over in order, complete or given up", "[scheduled_push]") {
  ComputeNode node(config_3x3(), 1, 2);
  using Arrival = ComputeNode::Arrival;
  CHECK(node.on_contribution(0, 4, 10ns) == Arrival::accepted);  // t = 4 before t = 1
  CHECK(node.on_contribution(1, 4, 10ns) == Arrival::accepted);
  CHECK(node.on_contribution(2, 4, 10ns) == Arrival::completes);
  CHECK(node.on_contribution(0, 1, 20ns) == Arrival::accepted);
  CHECK(node.on_contribution(0, 7, 20ns) == Arrival::over_credit);  // input 0 holds its 2 credits
  CHECK(node.on_contribution(0, 1, 20ns) == Arrival::duplicate);
  CHECK(node.on_contribution(0, 2, 20ns) == Arrival::not_mine);
  // t = 1 is the oldest and incomplete: t = 4 waits behind it.
  CHECK_FALSE(node.next_ready(30ns, 100ns).has_value());
  // Timed out 100 ns after its first contribution: given up, input 0 gets its credit back.
  auto ready = node.next_ready(120ns, 100ns);
  REQUIRE(ready.has_value());
  CHECK(ready->timeslice == 1);
  CHECK_FALSE(ready->complete);
  CHECK(node.release(1) == std::vector<InputIndex>{0});
  ready = node.next_ready(120ns, 100ns);
  REQUIRE(ready.has_value());
  CHECK(ready->timeslice == 4);
  CHECK(ready->complete);
  CHECK(node.release(4) == std::vector<InputIndex>{0, 1, 2});
  CHECK(node.on_contribution(1, 1, 130ns) == Arrival::late);  // given up already
  // An input that is gone: the time-slice it has not contributed to is given up at once.
  CHECK(node.on_contribution(0, 7, 140ns) == Arrival::accepted);
  CHECK_FALSE(node.next_ready(140ns, 0ns).has_value());  // no timeout: waits for inputs 1 and 2
  node.on_input_gone(2);
  CHECK_FALSE(node.next_ready(140ns, 0ns).has_value());  // input 1 is alive and may still send
  CHECK(node.on_contribution(1, 7, 150ns) == Arrival::accepted);
  ready = node.next_ready(150ns, 0ns);
  REQUIRE(ready.has_value());
  CHECK(ready->timeslice == 7);
  CHECK_FALSE(ready->complete);
  CHECK(node.held(0) == 1);
  node.release(7);
  CHECK(node.held(0) == 0);
  CHECK(node.open_timeslices() == 0);
}

TEST_CASE("A compute node keeps handed-over time-slices' credits until each is released, in any order",
          "[scheduled_push]") {
  ComputeNode node(config_3x3(), 1, 2);  // time-slices 1, 4, 7, ...; 2 credits per input
  using Arrival = ComputeNode::Arrival;
  for (TimesliceIndex t : {1, 4}) {
    for (InputIndex i = 0; i < 3; ++i) REQUIRE(node.on_contribution(i, t, 10ns) != Arrival::over_credit);
  }
  CHECK_THROWS_AS(node.hand_over(4), netio::Error);  // not the oldest open
  auto ready = node.next_ready(10ns, 0ns);
  REQUIRE(ready.has_value());
  CHECK(ready->timeslice == 1);
  node.hand_over(1);
  CHECK(node.open_timeslices() == 1);
  CHECK(node.handed_over_timeslices() == 1);
  ready = node.next_ready(10ns, 0ns);  // the next one is ready while 1 is still kept
  REQUIRE(ready.has_value());
  CHECK(ready->timeslice == 4);
  node.hand_over(4);
  CHECK(node.next_expected() == 7);
  CHECK(node.on_contribution(2, 4, 20ns) == Arrival::late);
  // Both kept: every input holds its two credits here, so a third contribution is refused.
  CHECK(node.held(0) == 2);
  CHECK(node.on_contribution(0, 7, 20ns) == Arrival::over_credit);
  // Released out of order: each gives back one credit per input.
  CHECK(node.release(4) == std::vector<InputIndex>{0, 1, 2});
  CHECK(node.held(0) == 1);
  CHECK(node.on_contribution(0, 7, 30ns) == Arrival::accepted);
  CHECK(node.release(1) == std::vector<InputIndex>{0, 1, 2});
  CHECK(node.handed_over_timeslices() == 0);
  CHECK_THROWS_AS(node.release(1), netio::Error);   // released already
  CHECK_THROWS_AS(node.release(10), netio::Error);  // never seen
  CHECK(node.held(0) == 1);                         // t = 7
}

TEST_CASE("A DFS input node says which sends are paced: those whose lateness the sender measures", "[scheduled_push]") {
  InputNode node(config_3x3(), 0, Mode::dfs);
  for (ComputeIndex c = 0; c < 3; ++c) node.grant(c, 4);
  auto next = node.next(0ns);
  REQUIRE(next.what == What::send);
  CHECK_FALSE(next.paced);  // no proposal yet: best-effort, due now
  // Interval 0 proposed to start at 1 ms and last 6 ms: its sends are due 1 ms apart.
  REQUIRE(node.on_proposal(Proposal{0, 1ms, 6ms}));
  next = node.next(0ns);
  CHECK(next.what == What::wait_until);
  CHECK(next.paced);
  CHECK(next.due == 1ms);
  next = node.next(3ms);  // 2 ms late
  REQUIRE(next.what == What::send);
  CHECK(next.paced);
  CHECK(3ms - next.due == 2ms);
  node.on_sent(next.timeslice, 3ms);
  // The DDE's fallback: best-effort again, nothing is late.
  InputNode fallen_back(config_3x3(), 0, Mode::dfs);
  for (ComputeIndex c = 0; c < 3; ++c) fallen_back.grant(c, 4);
  REQUIRE(fallen_back.on_proposal(Proposal{0, 1ms, 6ms, true}));
  next = fallen_back.next(3ms);
  REQUIRE(next.what == What::send);
  CHECK_FALSE(next.paced);
}
