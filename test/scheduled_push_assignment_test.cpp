// SPDX-License-Identifier: MIT
// The scheduled-push pattern with assignment by load (SchedulerConfig::assignment = load), end
// to end on loopback over every back-end, best-effort and DFS: every time-slice is built
// exactly once, complete, with the right bytes, each compute node's in index order; the DDE
// replicas decide the assignments; a compute node whose consumer is slow builds fewer than
// its fixed share.
#include "support/scheduled_push_system.hpp"

#include <catch2/catch.hpp>

#include <numeric>
#include <set>

using namespace netio;
using namespace netio::test;

namespace {

SystemOptions load_options(ns::Mode mode, std::uint32_t inputs, std::uint32_t computes) {
  SystemOptions options;
  options.mode = mode;
  options.config.input_count = inputs;
  options.config.compute_count = computes;
  options.config.timeslices_per_interval = 4 * computes;  // 4 rounds per interval
  options.config.history_length = 3;
  options.config.assignment = ns::Assignment::load;
  options.credits = 3;
  options.dde_replicas = 2;
  return options;
}

// Every time-slice below `count` was handed over exactly once, complete and with the right
// bytes, by one compute node, and each node handed its own over in index order. Returns how
// many each compute node built.
std::vector<std::size_t> check_built_once(const System& system, std::uint32_t computes, ns::TimesliceIndex count) {
  std::set<ns::TimesliceIndex> built;
  std::vector<std::size_t> per_node;
  for (ns::ComputeIndex c = 0; c < computes; ++c) {
    INFO("compute node " << c);
    const auto seen = system.deliveries(c).copy();
    per_node.push_back(seen.size());
    for (std::size_t k = 0; k < seen.size(); ++k) {
      CHECK(seen[k].complete);
      CHECK(seen[k].content_ok);
      CHECK(built.insert(seen[k].t).second);
      if (k > 0) CHECK(seen[k - 1].t < seen[k].t);
    }
    CHECK(system.incomplete(c).count() == 0);
  }
  CHECK(built.size() == count);
  CHECK((built.empty() || *built.rbegin() == count - 1));
  return per_node;
}

bool wait_built(const System& system, std::uint32_t computes, ns::TimesliceIndex count) {
  return eventually([&] {
    std::size_t total = 0;
    for (ns::ComputeIndex c = 0; c < computes; ++c) total += system.deliveries(c).count();
    return total >= count;
  });
}

}  // namespace

TEST_CASE("Assignment by load: every time-slice of a 3x3 system built once, in order per node", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  CAPTURE(base, ns::to_string(mode));
  const auto options = load_options(mode, 3, 3);
  const ns::TimesliceIndex count = 3 * 4 * 30;  // 30 intervals
  System system(base, options);
  REQUIRE(system.push_all(count).empty());
  for (ns::InputIndex i = 0; i < 3; ++i) CHECK(system.sender(i).wait_finished(60s));
  REQUIRE(wait_built(system, 3, count));
  check_built_once(system, 3, count);
  // Both replicas heard every input and decided every interval from the third on. The
  // inputs finish once their credits are back, which does not wait for their last reports
  // to reach the replicas: those may still be on their way.
  for (std::size_t d = 0; d < 2; ++d) {
    CHECK(eventually([&] { return system.dde_slot(d)->stats().load_reports >= 3 * 28; }));
    const auto stats = system.dde_slot(d)->stats();
    CHECK(stats.assignments_sent >= 3 * 20);
    CHECK(stats.bad_messages == 0);
    // The latest decision, as netio_dde_assignment_share and _interval show it.
    CHECK(stats.assignment == ns::Assignment::load);
    CHECK(stats.assigned_interval >= 20);
    CHECK(std::accumulate(stats.assigned_shares.begin(), stats.assigned_shares.end(), std::uint64_t{0}) == 12);
  }
}

TEST_CASE("Assignment by load: a compute node with a slow consumer builds fewer than its share", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  CAPTURE(base);
  auto options = load_options(ns::Mode::best_effort, 3, 3);
  options.slow_consumer = std::chrono::microseconds(2000);  // compute node 0: 2 ms per time-slice, the others none
  const ns::TimesliceIndex count = 3 * 4 * 40;
  System system(base, options);
  REQUIRE(system.push_all(count).empty());
  for (ns::InputIndex i = 0; i < 3; ++i) CHECK(system.sender(i).wait_finished(60s));
  REQUIRE(wait_built(system, 3, count));
  const auto per_node = check_built_once(system, 3, count);
  // Fixed, it would build count / 3 (160); its inputs found its credits out longest.
  CHECK(per_node[0] < count / 3);
}

TEST_CASE("Assignment by load: an input held up by a slow one waits for the assignment, and says how long",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  CAPTURE(base);
  // 2 × 2, intervals of 2 rounds (4 time-slices), enough credits (6 per pair) for input 0 to
  // send intervals 0 and 1 before input 1 sent anything. Interval 2's assignment needs input
  // 1's report of interval 0, which comes only once input 1 starts, 300 ms later.
  auto options = load_options(ns::Mode::best_effort, 2, 2);
  options.config.timeslices_per_interval = 4;
  options.dde_replicas = 1;
  options.credits = 6;
  const ns::TimesliceIndex count = 4 * 6;  // 6 intervals
  System system(base, options);
  std::thread first([&] {
    for (ns::TimesliceIndex t = 0; t < count; ++t) system.sender(0).push(t, contribution(0, t));
    system.sender(0).finish();
  });
  std::this_thread::sleep_for(300ms);
  const auto waiting = system.sender(0).stats();
  for (ns::TimesliceIndex t = 0; t < count; ++t) system.sender(1).push(t, contribution(1, t));
  system.sender(1).finish();
  first.join();
  for (ns::InputIndex i = 0; i < 2; ++i) CHECK(system.sender(i).wait_finished(60s));
  REQUIRE(wait_built(system, 2, count));
  check_built_once(system, 2, count);
  // Input 0 sent intervals 0 and 1 and stopped at 2 for want of its assignment.
  CHECK(waiting.sent == 8);
  const auto stats = system.sender(0).stats();
  CHECK(stats.assignment_waits >= 1);
  CHECK(stats.assignment_wait_ns >= std::uint64_t{200'000'000});  // most of the 300 ms
}
