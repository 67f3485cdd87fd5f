// SPDX-License-Identifier: MIT
// Compute nodes draining and joining during a run (issue 51, item 3), on loopback over every
// back-end, in both modes and both assignments: the draining node (under load the
// coordinator) names its boundary, builds everything below it and
// nothing from it on, and leaves; the others build its time-slices from the boundary on
// (attempt 0); nothing is lost or built twice, and its connection closing is not a loss.
#include "support/sanitizers.hpp"
#include "support/scheduled_push_system.hpp"

#include <catch2/catch.hpp>

using namespace netio;
using namespace netio::test;

namespace {

// Every input finished with a change and nothing lost: no node lost, nothing reassigned,
// undeliverable or unbuilt; `drained`: it counted the node draining, then drained (its
// connection closed after the farewell), and holds nothing; else it counted the join.
void check_inputs_after_change(System& system, bool drained) {
  for (ns::InputIndex i = 0; i < 3; ++i) {
    INFO("input " << i);
    CHECK(system.sender(i).wait_finished(30s));
    if (drained) CHECK(eventually([&] { return system.sender(i).stats().computes_drained == 1; }));
    const auto stats = system.sender(i).stats();
    CHECK((drained ? stats.computes_draining : stats.computes_joined) == 1);
    CHECK(stats.computes_lost == 0);
    CHECK(stats.reassigned == 0);
    CHECK(stats.undeliverable + stats.unbuilt == 0);
    if (drained) CHECK(stats.retained == 0);
  }
}

// Every time-slice below `count` handed over once on the three nodes (attempt 0 only).
void check_all_built_once(const System& system, ns::TimesliceIndex count) {
  CHECK(wait_total_delivered(system, 3, count));
  CHECK(check_each_built_once_per_attempt(system, 3, count) == 0);
}

// Slot 2 (standby) joins after a quarter of `count` was pushed: the rest pushed, every input
// took the change, everything built once. Returns the boundary, checked to be an interval
// start within the run.
ns::TimesliceIndex join_slot_2(System& system, const SystemOptions& options, ns::TimesliceIndex count) {
  REQUIRE(system.push_range(0, count / 4, false).empty());
  CHECK(eventually([&] { return system.deliveries(0).count() + system.deliveries(1).count() >= count / 8; }));
  CHECK(system.deliveries(2).count() == 0);
  system.receiver(2).join();
  // By load the decision comes with the load reports of the intervals sent from now on.
  REQUIRE(system.push_range(count / 4, count, true).empty());
  REQUIRE(eventually([&] { return system.receiver(2).stats().join_from != 0; }));
  const ns::TimesliceIndex from = system.receiver(2).stats().join_from;
  CHECK(from % options.config.timeslices_per_interval == 0);
  CHECK(from >= count / 4);
  CHECK(from < count);
  check_inputs_after_change(system, false);
  check_all_built_once(system, count);
  return from;
}

}  // namespace

TEST_CASE("A compute node that drains: nothing lost, nothing built twice, its leaving is no loss", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(ns::to_string(mode));
  auto options = three_by_three(mode);
  const ns::TimesliceIndex count = 3 * 200;
  System system(base, options);
  REQUIRE(system.push_range(0, count / 4, false).empty());
  CHECK(eventually([&] { return system.deliveries(2).count() >= 10; }));
  const auto from = system.receiver(2).drain();
  CHECK(system.receiver(2).drain() == from);  // idempotent
  CHECK(from % options.config.timeslices_per_interval == 0);
  CHECK(from < count);
  REQUIRE(system.push_range(count / 4, count, true).empty());
  REQUIRE(system.receiver(2).wait_drained(30s));
  const auto drained = system.receiver(2).stats();
  CHECK(drained.drained);
  CHECK(drained.drain_from == from);
  system.receiver_slot(2).reset();  // it leaves: its connections close
  check_inputs_after_change(system, true);
  // Everything built once (attempt 0), node 2's own below the boundary on node 2.
  check_all_built_once(system, count);
  for (const auto& d : system.deliveries(2).copy()) {
    CHECK(d.t < from);
    CHECK(d.t % 3 == 2);
  }
  std::size_t rerouted = 0;
  for (ns::ComputeIndex c = 0; c < 2; ++c) {
    CHECK(system.incomplete(c).count() == 0);
    for (const auto& d : system.deliveries(c).copy()) {
      CHECK(d.attempt == 0);
      if (d.t % 3 == 2) {
        CHECK(d.t >= from);
        ++rerouted;
      }
    }
    CHECK(system.receiver(c).stats().membership_notices >= 1);
  }
  CHECK(rerouted == (count - from) / 3);
}

TEST_CASE("A standby compute node that joins: its slot's time-slices from the named boundary on, none lost",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(ns::to_string(mode));
  auto options = three_by_three(mode);
  options.standby = {2};
  const ns::TimesliceIndex count = 3 * 200;
  System system(base, options);
  const auto from = join_slot_2(system, options, count);
  const auto joined = system.deliveries(2).copy();
  CHECK(joined.size() == (count - from) / 3);
  for (const auto& d : joined) {
    CHECK(d.t >= from);
    CHECK(d.t % 3 == 2);
  }
  for (ns::ComputeIndex c = 0; c < 3; ++c) {
    CHECK(system.incomplete(c).count() == 0);
    for (const auto& d : system.deliveries(c).copy()) {
      CHECK(d.attempt == 0);
      if (c != 2 && d.t % 3 == 2) CHECK(d.t < from);  // slot 2's before it joined: on the members
    }
  }
}

// Under assignment by load the coordinator (the DDE) names the boundary: drain() asks, the
// inputs flag the request in their load reports, the decision names the interval the node
// leaves from (its share 0 from there), and each input's farewell tells the node.
TEST_CASE("Assignment by load: a compute node that drains: nothing lost, nothing built from the named boundary on",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(ns::to_string(mode));
  auto options = three_by_three(mode);
  options.config.assignment = ns::Assignment::load;
  const ns::TimesliceIndex count = 3 * 200;
  System system(base, options);
  REQUIRE(system.push_range(0, count / 4, false).empty());
  CHECK(eventually([&] { return system.deliveries(2).count() >= 10; }));
  CHECK(system.receiver(2).drain() == 0);  // asked: the coordinator names the boundary
  REQUIRE(system.push_range(count / 4, count, true).empty());
  REQUIRE(system.receiver(2).wait_drained(30s));
  const auto drained = system.receiver(2).stats();
  CHECK(drained.drained);
  const ns::TimesliceIndex from = drained.drain_from;
  CHECK(system.receiver(2).drain() == from);  // idempotent, and named now
  CHECK(from % options.config.timeslices_per_interval == 0);
  CHECK(from >= count / 4);
  CHECK(from < count);
  system.receiver_slot(2).reset();  // it leaves: its connections close
  check_inputs_after_change(system, true);
  check_all_built_once(system, count);
  const auto on_drained = system.deliveries(2).copy();
  CHECK(on_drained.size() >= 10);
  for (const auto& d : on_drained) CHECK(d.t < from);
  for (ns::ComputeIndex c = 0; c < 2; ++c) {
    CHECK(system.incomplete(c).count() == 0);
    for (const auto& d : system.deliveries(c).copy()) CHECK(d.attempt == 0);
  }
  // The coordinator gave it nothing from the boundary's interval on.
  const auto dde = system.dde_slot(0)->stats();
  CHECK(dde.assigned_interval >= from / options.config.timeslices_per_interval);
  CHECK(dde.assigned_shares.at(2) == 0);
}

TEST_CASE("Assignment by load: a standby compute node that joins builds its share from the named boundary on",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(ns::to_string(mode));
  auto options = three_by_three(mode);
  options.config.assignment = ns::Assignment::load;
  options.standby = {2};
  const ns::TimesliceIndex count = 3 * 200;
  System system(base, options);
  const auto from = join_slot_2(system, options, count);
  // Its share from the boundary on: a fair one at once (a third), kept while it keeps up; at
  // least a sixth of what came after it joined. Under a sanitizer a twelfth: there the node
  // that just joined may lag and be cut back by the law (TSan stage of d97853a's CI: 60 where
  // 72 were asked); the shares themselves are hand-computed in
  // scheduler_assigner_membership_test.
  const auto joined = system.deliveries(2).copy();
  CHECK(joined.size() >= (count - from) / (sanitized ? 12 : 6));
  for (const auto& d : joined) {
    CHECK(d.t >= from);
    CHECK(d.attempt == 0);
  }
  for (ns::ComputeIndex c = 0; c < 3; ++c) CHECK(system.incomplete(c).count() == 0);
}

TEST_CASE("drain() with the automatic interval length names a start of one", "[scheduled_push]") {
  SystemOptions options;
  options.config.input_count = 2;
  options.config.compute_count = 3;  // timeslices_per_interval 0: 10,000 rounded down to 9,999
  options.config.history_length = 3;
  options.credits = 2;
  System system("tcp://127.0.0.1:0", options);
  // Nothing received yet: every input is below (2 + 2) × 3 = 12; the first interval start from there.
  CHECK(system.receiver(2).drain() == 9999);
}
