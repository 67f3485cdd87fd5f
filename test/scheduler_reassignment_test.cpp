// SPDX-License-Identifier: MIT
// Reassignment of a lost compute node's time-slices, as pure logic (issue 51, item 2):
// where each goes (reroute(), hand-computed), and a compute node building reassigned
// time-slices beside its own, dropping those built on the lost node.
#include "netio/scheduler/compute_node.hpp"
#include "netio/scheduler/reassignment.hpp"

#include <catch2/catch.hpp>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

SchedulerConfig reassignment_config() {
  SchedulerConfig config;
  config.input_count = 2;
  config.compute_count = 4;
  config.timeslices_per_interval = 8;
  config.history_length = 2;
  return config;
}

}  // namespace

TEST_CASE("reroute: a lost node's time-slices spread over the others, the attempt counts the lost ones",
          "[scheduled_push]") {
  const std::vector<bool> none(4, false);
  CHECK(reroute(5, 1, none) == Reroute{1, 0});  // own node alive: no change
  std::vector<bool> lost{false, true, false, false};
  // Node 1 of 4 lost: its time-slices t = 1, 5, 9, 13 (rounds 0 to 3, k = round mod 3) go to
  // 1 + 1 + k: nodes 2, 3, 0, then 2 again.
  CHECK(reroute(1, 1, lost) == Reroute{2, 1});
  CHECK(reroute(5, 1, lost) == Reroute{3, 1});
  CHECK(reroute(9, 1, lost) == Reroute{0, 1});
  CHECK(reroute(13, 1, lost) == Reroute{2, 1});
  // Nodes 1 and 2 lost: t = 1 (k = 0) passes node 2 on its way to 3: attempt 2; t = 5 (k = 1)
  // goes to 3 directly; t = 2 (node 2's own, k = 0) passes nothing lost: 3, attempt 1.
  lost[2] = true;
  CHECK(reroute(1, 1, lost) == Reroute{3, 2});
  CHECK(reroute(5, 1, lost) == Reroute{3, 1});
  CHECK(reroute(9, 1, lost) == Reroute{0, 1});
  CHECK(reroute(2, 2, lost) == Reroute{3, 1});
  // Every node lost: nowhere; a single node: nowhere either.
  CHECK_FALSE(reroute(1, 1, std::vector<bool>(4, true)).has_value());
  CHECK_FALSE(reroute(0, 0, std::vector<bool>{true}).has_value());
  CHECK_FALSE(reroute(0, 7, none).has_value());  // out of range
}

TEST_CASE("A compute node builds reassigned time-slices beside its own, with their attempt", "[scheduled_push]") {
  ComputeNode node(reassignment_config(), 2, 2);  // own time-slices 2, 6, 10, ...
  // Its own time-slice 2 is half there; lost node 1's time-slice 5 arrives reassigned.
  CHECK(node.on_contribution(0, 2, 0ns) == ComputeNode::Arrival::accepted);
  CHECK(node.on_reassigned(0, 5, 1, 1ns) == ComputeNode::Arrival::accepted);
  CHECK(node.on_reassigned(1, 5, 1, 2ns) == ComputeNode::Arrival::completes);
  CHECK(node.reassigned_open() == 1);
  // Time-slice 5 is ready before 2 (which waits for input 1): reassigned ones wait for nothing of the own order.
  auto ready = node.next_ready(3ns, 0ns);
  REQUIRE(ready);
  CHECK(ready->timeslice == 5);
  CHECK(ready->complete);
  CHECK(ready->attempt == 1);
  CHECK(node.release(5) == std::vector<InputIndex>{0, 1});
  CHECK_FALSE(node.next_ready(3ns, 0ns));
  CHECK(node.on_contribution(1, 2, 4ns) == ComputeNode::Arrival::completes);
  ready = node.next_ready(5ns, 0ns);
  REQUIRE(ready);
  CHECK(ready->timeslice == 2);
  CHECK(ready->attempt == 0);
  (void)node.release(2);
  // Attempt 0 is not a reassignment; a second contribution of one input is a duplicate.
  CHECK(node.on_reassigned(0, 9, 0, 6ns) == ComputeNode::Arrival::not_mine);
  CHECK(node.on_reassigned(0, 9, 1, 6ns) == ComputeNode::Arrival::accepted);
  CHECK(node.on_reassigned(0, 9, 1, 6ns) == ComputeNode::Arrival::duplicate);
  // Reassigned ones have a window of their own, credits_per_input (2) per input.
  CHECK(node.on_reassigned(0, 13, 1, 6ns) == ComputeNode::Arrival::accepted);
  CHECK(node.on_reassigned(0, 17, 1, 6ns) == ComputeNode::Arrival::over_credit);
  CHECK(node.held(0) == 0);  // the own credits are untouched
}

TEST_CASE("A compute node drops a reassigned time-slice the lost node built, and takes none later",
          "[scheduled_push]") {
  ComputeNode node(reassignment_config(), 0, 4);
  // Input 0 had no credit for time-slice 1 from lost node 1 and sends it here; input 1 had
  // it (node 1 built it) and says so in its LostCompute: freed, input 0's credit goes back.
  CHECK(node.on_reassigned(0, 1, 1, 0ns) == ComputeNode::Arrival::accepted);
  CHECK(node.on_built_elsewhere(1) == std::vector<InputIndex>{0});
  CHECK(node.reassigned_open() == 0);
  CHECK_FALSE(node.next_ready(1s, 0ns));
  // Known built before any contribution came: the contribution is late (its credit back at once).
  CHECK(node.on_built_elsewhere(5).empty());
  CHECK(node.on_reassigned(0, 5, 1, 0ns) == ComputeNode::Arrival::late);
  // A reassigned time-slice given up (timeout) takes no contribution afterwards either.
  CHECK(node.on_reassigned(0, 9, 1, 0ns) == ComputeNode::Arrival::accepted);
  auto ready = node.next_ready(2s, 1s);
  REQUIRE(ready);
  CHECK_FALSE(ready->complete);
  CHECK(ready->attempt == 1);
  CHECK(node.release(9) == std::vector<InputIndex>{0});
  CHECK(node.on_reassigned(1, 9, 1, 3s) == ComputeNode::Arrival::late);
  // A reassigned time-slice kept by the consumer (handed over) is released in any order.
  CHECK(node.on_reassigned(0, 13, 1, 3s) == ComputeNode::Arrival::accepted);
  CHECK(node.on_reassigned(1, 13, 1, 3s) == ComputeNode::Arrival::completes);
  node.hand_over(13);
  CHECK(node.on_reassigned(0, 13, 1, 3s) == ComputeNode::Arrival::late);
  CHECK(node.release(13) == std::vector<InputIndex>{0, 1});
}
