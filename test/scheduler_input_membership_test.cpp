// SPDX-License-Identifier: MIT
// Inputs joining during a run (issue 51, item 3), as pure logic, hand-computed: which input
// slots are members at a time-slice (InputMembership), and a compute node building the
// time-slices below a standby input's boundary without it and those from it on with it.
#include "netio/error.hpp"
#include "netio/scheduler/compute_node.hpp"
#include "netio/scheduler/history_manager.hpp"
#include "netio/scheduler/input_engine.hpp"
#include "netio/scheduler/input_membership.hpp"
#include "netio/scheduler/input_node.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

// inputs × computes, intervals of `interval` time-slices.
SchedulerConfig input_join_config(std::uint32_t inputs, std::uint32_t computes, std::uint64_t interval) {
  SchedulerConfig config;
  config.input_count = inputs;
  config.compute_count = computes;
  config.timeslices_per_interval = interval;
  config.history_length = 2;
  return config;
}

}  // namespace

TEST_CASE("InputMembership: a standby input is a member from its boundary on, once named", "[scheduled_push]") {
  InputMembership m(3, {2});
  CHECK(m.any_standby());
  CHECK(m.standby(2));
  CHECK_FALSE(m.standby(0));
  CHECK(m.member(0, 0));
  CHECK_FALSE(m.member(2, 0));
  CHECK_FALSE(m.member(2, 1000000));  // no boundary yet: never
  CHECK(m.members(5) == 2);
  CHECK_FALSE(m.joins_from(2).has_value());
  REQUIRE(m.join(2, 36));
  CHECK_FALSE(m.join(2, 36));  // heard again, from another input
  CHECK(m.joins_from(2) == TimesliceIndex{36});
  CHECK_FALSE(m.member(2, 35));
  CHECK(m.member(2, 36));
  CHECK(m.members(35) == 2);
  CHECK(m.members(36) == 3);
  CHECK_THROWS_AS(m.join(2, 48), netio::Error);  // another boundary than the one named
  CHECK_THROWS_AS(m.join(0, 12), netio::Error);  // a member from the start
  CHECK_THROWS_AS(m.join(3, 12), netio::Error);  // out of range
  InputMembership zero(3, {1});
  CHECK_THROWS_AS(zero.join(1, 0), netio::Error);
  CHECK_THROWS_AS(InputMembership(3, {3}), netio::Error);
  CHECK_FALSE(InputMembership(3).any_standby());
  CHECK(InputMembership(3).members(7) == 3);
}

TEST_CASE("ComputeNode: time-slices below a standby input's boundary complete without it, from it on with it",
          "[scheduled_push]") {
  const auto config = input_join_config(3, 3, 12);
  ComputeNode node(config, 1, 4, {2});  // compute node 1: time-slices 1, 4, 7, ...
  using A = ComputeNode::Arrival;
  // Before any boundary: inputs 0 and 1 make time-slice 1 complete; input 2 may not contribute.
  CHECK(node.on_contribution(2, 1, 0ns) == A::not_mine);
  CHECK(node.on_contribution(0, 1, 0ns) == A::accepted);
  CHECK(node.on_contribution(1, 1, 0ns) == A::completes);
  auto ready = node.next_ready(0ns, 0ns);
  REQUIRE(ready);
  CHECK(ready->timeslice == 1);
  CHECK(ready->complete);
  CHECK(ready->contributed == std::vector<bool>{true, true, false});
  CHECK(node.release(1) == std::vector<InputIndex>{0, 1});
  // Input 2 joins from 12: 4, 7 and 10 are built without it, 13 on with it.
  REQUIRE(node.on_input_joins(2, 12));
  CHECK_FALSE(node.on_input_joins(2, 12));
  CHECK(node.on_contribution(2, 10, 0ns) == A::not_mine);  // below its boundary
  for (const TimesliceIndex t : {4, 7, 10}) {
    CHECK(node.on_contribution(0, t, 0ns) == A::accepted);
    CHECK(node.on_contribution(1, t, 0ns) == A::completes);
    ready = node.next_ready(0ns, 0ns);
    REQUIRE(ready);
    CHECK(ready->timeslice == t);
    CHECK(ready->complete);
    node.release(t);
  }
  CHECK(node.on_contribution(0, 13, 0ns) == A::accepted);
  CHECK(node.on_contribution(1, 13, 0ns) == A::accepted);  // input 2 missing: not complete
  CHECK_FALSE(node.next_ready(0ns, 0ns).has_value());
  CHECK(node.on_contribution(2, 13, 0ns) == A::completes);
  ready = node.next_ready(0ns, 0ns);
  REQUIRE(ready);
  CHECK(ready->timeslice == 13);
  CHECK(ready->complete);
  CHECK(node.release(13) == std::vector<InputIndex>{0, 1, 2});
  // A standby input gone before it contributed: nothing waits for it.
  node.on_input_gone(2);
  CHECK(node.on_contribution(0, 16, 0ns) == A::accepted);
  CHECK(node.on_contribution(1, 16, 0ns) == A::accepted);
  ready = node.next_ready(0ns, 0ns);
  REQUIRE(ready);
  CHECK_FALSE(ready->complete);
}

TEST_CASE("ComputeNode: a standby input's boundary at or below a time-slice handed over is refused",
          "[scheduled_push]") {
  const auto config = input_join_config(2, 2, 4);
  ComputeNode node(config, 0, 4, {1});
  CHECK(node.on_contribution(0, 0, 0ns) == ComputeNode::Arrival::completes);
  node.release(0);
  CHECK(node.on_contribution(0, 2, 0ns) == ComputeNode::Arrival::completes);
  node.release(2);
  CHECK_THROWS_WITH(node.on_input_joins(1, 2), Catch::Contains("handed over already"));
  CHECK(node.on_input_joins(1, 4));
  CHECK_THROWS_AS(ComputeNode(config, 0, 4, {2}), netio::Error);  // out of range
}

TEST_CASE("InputNode::start_at: a joining input's stream starts at its boundary's round", "[scheduled_push]") {
  const auto config = input_join_config(3, 3, 12);
  InputNode node(config, 2, Mode::best_effort);
  for (ComputeIndex c = 0; c < 3; ++c) node.grant(c, 8);
  CHECK_THROWS_WITH(node.start_at(30), Catch::Contains("not an interval start"));
  node.start_at(36);
  CHECK(node.sent_count() == 36);
  // Round 12 (36, 37, 38) in this input's offset order, each to its own node (t mod 3), then round 13.
  std::vector<TimesliceIndex> round;
  for (int k = 0; k < 3; ++k) {
    const auto next = node.next(0ns);
    REQUIRE(next.what == InputNode::Next::What::send);
    CHECK(next.compute == next.timeslice % 3);
    round.push_back(next.timeslice);
    node.on_sent(next.timeslice, 0ns);
  }
  std::sort(round.begin(), round.end());
  CHECK(round == std::vector<TimesliceIndex>{36, 37, 38});
  const auto next = node.next(0ns);
  CHECK(next.timeslice >= 39);
  CHECK(next.timeslice <= 41);
  CHECK_THROWS_WITH(node.start_at(48), Catch::Contains("after 39 sends"));
  // DFS: the engine starts at the boundary's interval (36 / 12 = 3), best-effort until a proposal.
  InputNode dfs(config, 2, Mode::dfs);
  for (ComputeIndex c = 0; c < 3; ++c) dfs.grant(c, 8);
  dfs.start_at(36);
  REQUIRE(dfs.engine() != nullptr);
  CHECK(dfs.engine()->current_interval() == 3);
  const auto first = dfs.next(0ns);
  CHECK(first.what == InputNode::Next::What::send);
  CHECK(first.timeslice >= 36);
  CHECK(first.timeslice <= 38);
  InputEngine engine(config, 0);
  engine.start_at(5);
  CHECK(engine.current_interval() == 5);
}

TEST_CASE("HistoryManager: an interval is complete once its member inputs reported, a joiner counts from its interval",
          "[scheduled_push]") {
  HistoryManager history(3, 8, {2});
  const auto measured = [](IntervalIndex j, std::int64_t start_us, std::int64_t duration_us) {
    MeasuredInterval m;
    m.interval = j;
    m.start = std::chrono::microseconds(start_us);
    m.duration = std::chrono::microseconds(duration_us);
    return m;
  };
  // Intervals 0 and 1: inputs 0 and 1 only. Average start (100 + 200) / 2 = 150, median
  // duration of {10, 30}: 20.
  CHECK_FALSE(history.add(0, measured(0, 100, 10)));
  const auto first = history.add(1, measured(0, 200, 30));
  REQUIRE(first);
  CHECK(first->start == std::chrono::microseconds(150));
  CHECK(first->duration == std::chrono::microseconds(20));
  CHECK_THROWS_WITH(history.add(2, measured(1, 0, 1)), Catch::Contains("on standby"));
  REQUIRE(history.join(2, 2));
  CHECK_FALSE(history.join(2, 2));
  CHECK_THROWS_WITH(history.add(2, measured(1, 0, 1)), Catch::Contains("until interval 2"));
  CHECK_FALSE(history.add(0, measured(1, 300, 10)));
  REQUIRE(history.add(1, measured(1, 400, 10)));
  // Interval 2 waits for input 2 as well: start (100 + 200 + 600) / 3 = 300, median of {10, 20, 60} = 20.
  CHECK_FALSE(history.add(0, measured(2, 100, 10)));
  CHECK_FALSE(history.add(1, measured(2, 200, 20)));
  const auto third = history.add(2, measured(2, 600, 60));
  REQUIRE(third);
  CHECK(third->start == std::chrono::microseconds(300));
  CHECK(third->duration == std::chrono::microseconds(20));
  // A boundary at or below a complete interval is refused: it would count differently elsewhere.
  HistoryManager late(2, 8, {1});
  CHECK(late.add(0, measured(0, 0, 1)));
  CHECK(late.add(0, measured(1, 0, 1)));
  CHECK_THROWS_WITH(late.join(1, 1), Catch::Contains("complete already"));
  CHECK(late.join(1, 2));
}
