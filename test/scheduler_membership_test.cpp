// SPDX-License-Identifier: MIT
// Compute nodes draining and joining (issue 51, item 3), as pure logic, hand-computed: which
// slots are members at a time-slice and where a non-member's time-slices go (Membership),
// an input's order once a slot drained (each node still gets its time-slices in index
// order), and a compute node taking another slot's time-slices.
#include "netio/error.hpp"
#include "netio/scheduler/compute_node.hpp"
#include "netio/scheduler/input_node.hpp"
#include "netio/scheduler/membership.hpp"

#include <catch2/catch.hpp>

#include <utility>
#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

SchedulerConfig membership_config() {
  SchedulerConfig config;
  config.input_count = 2;
  config.compute_count = 4;
  config.timeslices_per_interval = 8;
  config.history_length = 2;
  return config;
}

// Input `self`'s next `count` sends, (time-slice, node), every node granted plenty of credits.
std::vector<std::pair<TimesliceIndex, ComputeIndex>> sends(InputNode& node, std::size_t count) {
  std::vector<std::pair<TimesliceIndex, ComputeIndex>> out;
  for (std::size_t k = 0; k < count; ++k) {
    const auto next = node.next(0ns);
    REQUIRE(next.what == InputNode::Next::What::send);
    out.emplace_back(next.timeslice, next.compute);
    node.on_sent(next.timeslice, 0ns);
  }
  return out;
}

}  // namespace

TEST_CASE("Membership: a drained slot's time-slices from its boundary on go to the members, spread",
          "[scheduled_push]") {
  Membership m(4);
  CHECK(m.all_members(0, 100));
  CHECK(m.route(10, 2) == 2u);
  REQUIRE(m.apply(MembershipChange{2, false, 8}));
  CHECK_FALSE(m.apply(MembershipChange{2, false, 8}));  // heard again, from another input: known
  CHECK(m.changes() == 1);
  CHECK(m.member(2, 7));
  CHECK_FALSE(m.member(2, 8));
  CHECK(m.leaves_from(2) == TimesliceIndex{8});
  CHECK_FALSE(m.leaves_from(1).has_value());
  CHECK(m.all_members(0, 8));
  CHECK_FALSE(m.all_members(4, 12));
  CHECK_FALSE(m.all_members(8, 12));
  // Below the boundary: its own. From it on, k = (t / 4) mod 3 and the first member of
  // 2 + 1 + k, ...: t = 10 (k = 2) → node 1, t = 14 (k = 0) → 3, t = 18 (k = 1) → 0.
  CHECK(m.route(6, 2) == 2u);
  CHECK(m.route(10, 2) == 1u);
  CHECK(m.route(14, 2) == 3u);
  CHECK(m.route(18, 2) == 0u);
  CHECK(m.route(11, 3) == 3u);  // a member: its own
  CHECK(m.non_members(9) == std::vector<bool>{false, false, true, false});
  // Refused: a boundary that is no round start, a non-member leaving, a slot out of range,
  // a change not after the slot's last one.
  CHECK_THROWS_AS(m.apply(MembershipChange{1, false, 9}), netio::Error);
  CHECK_THROWS_AS(m.apply(MembershipChange{2, false, 16}), netio::Error);
  CHECK_THROWS_AS(m.apply(MembershipChange{4, false, 16}), netio::Error);
  CHECK_THROWS_AS(m.apply(MembershipChange{2, true, 4}), netio::Error);
}

TEST_CASE("Membership: a standby slot is routed around until it joins at its boundary", "[scheduled_push]") {
  Membership m(4, {3});
  CHECK_FALSE(m.all_members(0, 4));
  CHECK_FALSE(m.member(3, 0));
  // Slot 3's time-slices: t = 3 (k = 0) → 3 + 1 = node 0; t = 7 (k = 1) → node 1.
  CHECK(m.route(3, 3) == 0u);
  CHECK(m.route(7, 3) == 1u);
  REQUIRE(m.apply(MembershipChange{3, true, 16}));
  CHECK(m.route(15, 3) == 0u);  // k = 3 mod 3 = 0: node 0
  CHECK(m.route(19, 3) == 3u);  // a member from 16 on
  CHECK(m.joins_from(3) == TimesliceIndex{16});
  CHECK(m.all_members(16, 100));
}

TEST_CASE("An input routes a drained slot's time-slices to the members, each node's in index order",
          "[scheduled_push]") {
  InputNode node(membership_config(), 1, Mode::best_effort);
  for (ComputeIndex c = 0; c < 4; ++c) node.grant(c, 100);
  // Input 1 visits places 1, 2, 3, 0 of every round.
  REQUIRE(sends(node, 4) == std::vector<std::pair<TimesliceIndex, ComputeIndex>>{{1, 1}, {2, 2}, {3, 3}, {0, 0}});
  REQUIRE(node.on_membership(MembershipChange{0, false, 8}));
  CHECK_FALSE(node.on_membership(MembershipChange{0, false, 8}));
  // Round 1 is below the boundary: as before.
  CHECK(sends(node, 4) == std::vector<std::pair<TimesliceIndex, ComputeIndex>>{{5, 1}, {6, 2}, {7, 3}, {4, 0}});
  // Round 2: slot 0's place (t = 8, k = 2) goes to node 3, which has places 0 and 3 now: the
  // input's first visit to node 3 (place 3) takes the smaller, 8, its second (place 0) 11.
  CHECK(sends(node, 4) == std::vector<std::pair<TimesliceIndex, ComputeIndex>>{{9, 1}, {10, 2}, {8, 3}, {11, 3}});
  // Round 3: t = 12 (k = 0) goes to node 1: places 0 and 1, visited at places 1 and 0.
  CHECK(sends(node, 4) == std::vector<std::pair<TimesliceIndex, ComputeIndex>>{{12, 1}, {14, 2}, {15, 3}, {13, 1}});
  CHECK(node.compute_of(16) == 2u);  // k = 4 mod 3 = 1: 0 + 1 + 1
  // A change whose round this input has entered is too late to agree with the others.
  CHECK_THROWS_AS(node.on_membership(MembershipChange{1, false, 12}), netio::Error);
}

TEST_CASE("A compute node takes a drained slot's time-slices once told, none of its own late", "[scheduled_push]") {
  ComputeNode node(membership_config(), 1, 2);  // own time-slices 1, 5, 9, ...
  CHECK(node.on_contribution(0, 5, 0ns) == ComputeNode::Arrival::accepted);
  CHECK(node.on_contribution(1, 5, 0ns) == ComputeNode::Arrival::completes);
  // Slot 1 drains nothing here; slot 0 drains from 8, and 8 is routed here (another node's).
  CHECK(node.on_contribution(0, 8, 1ns) == ComputeNode::Arrival::not_mine);
  node.accept_rerouted();
  node.accept_rerouted();  // idempotent
  CHECK(node.on_contribution(0, 8, 1ns) == ComputeNode::Arrival::accepted);
  CHECK(node.on_contribution(1, 8, 1ns) == ComputeNode::Arrival::completes);
  auto ready = node.next_ready(2ns, 0ns);
  REQUIRE(ready);
  CHECK(ready->timeslice == 5);
  CHECK(node.release(5) == std::vector<InputIndex>{0, 1});
  ready = node.next_ready(2ns, 0ns);
  REQUIRE(ready);
  CHECK(ready->timeslice == 8);
  CHECK(ready->attempt == 0);
  (void)node.release(8);
  // Next expected is 9 now, not 12: its own 9 is not late.
  CHECK(node.next_expected() == 9);
  CHECK(node.on_contribution(0, 9, 3ns) == ComputeNode::Arrival::accepted);
  CHECK(node.on_contribution(0, 3, 3ns) == ComputeNode::Arrival::late);
}
