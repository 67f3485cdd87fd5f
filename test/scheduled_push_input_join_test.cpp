// SPDX-License-Identifier: MIT
// Inputs joining during a run (issue 51, item 3), on loopback over every back-end, in both
// modes and both assignments: a standby input connects but sends nothing; when it joins, a
// member compute node (under assignment by load the coordinator, in a decision) names its
// boundary T; every time-slice below T is built without it, every one from T on with it, none
// lost.
#include "support/matching_log_lines.hpp"
#include "support/scheduled_push_system.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <limits>

using namespace netio;
using namespace netio::test;

TEST_CASE("A standby input that joins: below its boundary built without it, from it on with it, none lost",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  const auto assignment = GENERATE(ns::Assignment::fixed, ns::Assignment::load);
  const bool by_load = assignment == ns::Assignment::load;
  INFO(ns::to_string(mode) << (by_load ? ", by load" : ", fixed"));
  auto options = three_by_three(mode);
  options.config.assignment = assignment;
  options.standby_inputs = {2};
  if (by_load) options.dde_replicas = 2;  // both decide, the inputs take the first of each interval
  System system(base, options);
  // Inputs 0 and 1 run from time-slice 0 until told where to stop (the boundary + 10 intervals).
  std::atomic<ns::TimesliceIndex> count{std::numeric_limits<ns::TimesliceIndex>::max()};
  std::vector<std::string> errors(3);
  std::vector<std::thread> members;
  for (ns::InputIndex i = 0; i < 2; ++i) {
    members.emplace_back([&, i] {
      try {
        for (ns::TimesliceIndex t = 0; t < count.load(); ++t) system.sender(i).push(t, contribution(i, t));
        system.sender(i).finish();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  CHECK(eventually([&] { return system.deliveries(0).count() + system.deliveries(1).count() >= 30; }));
  CHECK_THROWS_WITH(system.sender(2).push(0, contribution(2, 0)), Catch::Contains("on standby"));
  system.sender(2).join();
  system.sender(2).join();  // idempotent
  const auto from = system.sender(2).wait_joined(10s);
  count = from ? *from + 10 * 12 : 0;  // the members wait for input 2 from the boundary on
  if (from) {
    try {
      for (ns::TimesliceIndex t = *from; t < count; ++t) system.sender(2).push(t, contribution(2, t));
      system.sender(2).finish();
    } catch (const std::exception& e) {
      errors[2] = e.what();
    }
  }
  for (auto& thread : members) thread.join();
  REQUIRE(from);
  INFO("boundary " << *from);
  CHECK(*from % 12 == 0);
  CHECK(*from >= 30);
  CHECK(errors == std::vector<std::string>(3));
  for (ns::InputIndex i = 0; i < 3; ++i) {
    INFO("input " << i);
    CHECK(system.sender(i).wait_finished(30s));
    const auto stats = system.sender(i).stats();
    CHECK(stats.computes_lost == 0);
    CHECK(stats.undeliverable + stats.unbuilt == 0);
    CHECK(stats.inputs_joined == (i == 2 ? 0u : 1u));
    CHECK(stats.join_from == (i == 2 ? *from : 0u));
  }
  CHECK(system.sender(2).stats().sent == count - *from);
  REQUIRE(wait_total_delivered(system, 3, count));
  CHECK(check_each_built_once_per_attempt(system, 3, count) == 0);
  std::uint32_t named = 0;
  for (ns::ComputeIndex c = 0; c < 3; ++c) {
    INFO("compute node " << c);
    CHECK(system.incomplete(c).count() == 0);
    for (const auto& d : system.deliveries(c).copy()) {
      INFO("time-slice " << d.t);
      CHECK(d.complete);
      CHECK(d.contributions == (d.t < *from ? 2u : 3u));
    }
    const auto stats = system.receiver(c).stats();
    CHECK(stats.inputs_joined == 1);
    CHECK(stats.dropped == 0);
    named += stats.input_joins_named;
  }
  CHECK(named == (by_load ? 0u : 1u));  // under load the coordinator names it
  if (by_load) {
    // The decision naming the join came from the coordinator: input 2 took assignments from
    // its boundary's interval on, and each replica's history counts it from there (told by
    // the inputs); both replicas decided alike (an input refuses nothing it takes twice).
    for (std::size_t d = 0; d < 2; ++d) {
      INFO("DDE replica " << d);
      // A replica no input waits for (every input takes the first copy of a decision) may
      // still be working through the reports when the inputs finish: once seen under ctest
      // -j3, replica 1 at nothing decided yet.
      CHECK(eventually([&] {
        const auto s = system.dde_slot(d)->stats();
        return s.inputs_joined == 1 && s.assigned_interval >= (count - 1) / 12;
      }));
      const auto dde = system.dde_slot(d)->stats();
      CHECK(dde.inputs_joined == 1);
      CHECK(dde.bad_messages == 0);
      CHECK(dde.assigned_interval >= (count - 1) / 12);
    }
    CHECK(system.sender(2).stats().assignments_taken >= 10);
    for (ns::InputIndex i = 0; i < 3; ++i) CHECK(system.sender(i).stats().ddes_lost == 0);
  }
  if (mode == ns::Mode::dfs) {
    // The DDE's history counted input 2 from its boundary's interval on: its reports were
    // taken (a report before the join would be a bad message), and it was proposed to.
    const auto dde = system.dde_slot(0)->stats();
    CHECK(dde.inputs_joined == 1);
    CHECK(dde.bad_messages == 0);
    std::size_t to_joiner = 0;
    for (const auto& [key, proposal] : system.proposals(0).copy()) {
      if (key.first != 2) continue;
      ++to_joiner;
      CHECK(key.second >= *from / 12 + 2);  // asked for at its first report, of the boundary's interval
    }
    CHECK(to_joiner > 0);
  }
}

TEST_CASE("Standby inputs that the compute nodes and the input disagree on are refused, naming why",
          "[scheduled_push]") {
  const bool input_claims = GENERATE(true, false);
  auto options = three_by_three(ns::Mode::best_effort);
  options.standby_inputs = input_claims ? std::vector<ns::InputIndex>{} : std::vector<ns::InputIndex>{2};
  options.inputs_claiming_standby = input_claims ? std::vector<ns::InputIndex>{2} : std::vector<ns::InputIndex>{};
  MatchingLogLines refusals(input_claims
                                ? "input 2 is on standby, but this node's standby_inputs does not list it"
                                : "input 2 is a member from the start, but this node's standby_inputs lists it");
  System system("tcp://127.0.0.1:0", options);
  // Every compute node refuses input 2 (its log line), and input 2 loses every one (its own).
  CHECK(eventually([&] { return system.sender(2).stats().computes_lost == 3; }));
  CHECK(eventually([&] { return refusals.count() >= 6; }));
  for (ns::InputIndex i = 0; i < 2; ++i) CHECK(system.sender(i).stats().computes_lost == 0);
}

TEST_CASE("join() of an input that is a member from the start is refused, naming why", "[scheduled_push]") {
  const auto assignment = GENERATE(ns::Assignment::fixed, ns::Assignment::load);
  Context context(context_options());
  sp::TimesliceSenderOptions so;
  so.config.input_count = 2;
  so.config.compute_count = 2;
  so.config.timeslices_per_interval = 4;
  so.config.assignment = assignment;
  so.input = 1;
  so.compute_endpoints = {Endpoint::parse("tcp://127.0.0.1:1"), Endpoint::parse("tcp://127.0.0.1:1")};
  so.dde_endpoints = {Endpoint::parse("tcp://127.0.0.1:1")};
  sp::TimesliceSender member(context, so);
  CHECK_THROWS_WITH(member.join(), Catch::Contains("without options.standby"));
}
