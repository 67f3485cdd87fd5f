// SPDX-License-Identifier: MIT
// Inputs joining under assignment by load (issue 51, item 3): the coordinator (Assigner)
// names a standby input's boundary from the member inputs' flags in their load reports, in
// hand-computed cases (the join named once, two intervals on; its reports waited for from
// there, not before; replicas agreeing whatever the order), the report and the decision on
// the wire, a member input flagging the request and taking the named join, and the standby
// input starting at the boundary its assignment names.
#include "netio/error.hpp"
#include "netio/scheduler/assigner.hpp"
#include "netio/scheduler/assignment_messages.hpp"
#include "netio/scheduler/input_node.hpp"
#include "support/load_assignment.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace netio::scheduler;

namespace {

// 3 inputs × 2 compute nodes, 8 time-slices per interval (4 rounds): a fair share is 4, and
// interval k starts at time-slice 8k. Input 2 is on standby.
SchedulerConfig three_inputs_two_computes() { return netio::test::by_load(3, 2, 8); }

using Shares = std::vector<std::uint32_t>;
using Uses = std::vector<std::uint16_t>;
using Inputs = std::vector<InputIndex>;

LoadReport even_report(InputIndex i, IntervalIndex j, Inputs joining = {}) {
  return LoadReport{i, j, Uses{100, 100}, joining};
}

}  // namespace

TEST_CASE("assigner input join: a flag makes the standby input a member two intervals on, named once", "[scheduler]") {
  Assigner a(three_inputs_two_computes(), {2});
  // Interval 0: the two members report; input 2 is not waited for.
  CHECK(a.on_report(even_report(0, 0)).empty());
  CHECK(a.on_report(even_report(1, 0)) == std::vector<IntervalAssignment>{{2, Shares{4, 4}}});
  // Input 0 heard input 2's request while it sent interval 1: interval 3 (from time-slice 24)
  // names the join.
  CHECK(a.on_report(even_report(0, 1, {2})).empty());
  const auto decided = a.on_report(even_report(1, 1));
  REQUIRE(decided.size() == 1);
  CHECK(decided[0] == IntervalAssignment{3, Shares{4, 4}, {}, {InputJoinChange{2, 24}}});
  CHECK(a.inputs().joins_from(2) == IntervalIndex{3});
  // Interval 2's reports still flag it (made before the inputs held that decision): no second
  // join; input 2 is no member at 2, so the decision does not wait for it.
  CHECK(a.on_report(even_report(0, 2, {2})).empty());
  CHECK(a.on_report(even_report(1, 2, {2})) == std::vector<IntervalAssignment>{{4, Shares{4, 4}}});
  // From interval 3 on its reports are waited for: decision 5 needs all three.
  CHECK(a.on_report(even_report(0, 3)).empty());
  CHECK(a.on_report(even_report(1, 3)).empty());
  CHECK(a.on_report(even_report(2, 3)) == std::vector<IntervalAssignment>{{5, Shares{4, 4}}});
  // Gone, it is not waited for any more.
  CHECK(a.on_report(even_report(0, 4)).empty());
  CHECK(a.on_report(even_report(1, 4)).empty());
  CHECK(a.on_input_gone(2) == std::vector<IntervalAssignment>{{6, Shares{4, 4}}});

  // Without a flag it stays out, and a report of its own before its join is not counted.
  Assigner b(three_inputs_two_computes(), {2});
  CHECK(b.on_report(even_report(2, 0)).empty());
  CHECK(b.on_report(even_report(0, 0)).empty());
  CHECK(b.on_report(even_report(1, 0)) == std::vector<IntervalAssignment>{{2, Shares{4, 4}}});
  CHECK(b.on_report(even_report(0, 1)).empty());
  CHECK(b.on_report(even_report(1, 1)) == std::vector<IntervalAssignment>{{3, Shares{4, 4}}});
  CHECK_FALSE(b.inputs().joins_from(2).has_value());
  // A flag for an input that is a member from the start is ignored.
  CHECK(b.on_report(even_report(0, 2, {1})).empty());
  CHECK(b.on_report(even_report(1, 2)) == std::vector<IntervalAssignment>{{4, Shares{4, 4}}});
  CHECK_THROWS_AS(Assigner(three_inputs_two_computes(), {3}), netio::Error);  // out of range
}

TEST_CASE("assigner input join: replicas name the same join whatever order the reports arrive in", "[scheduler]") {
  // Input 1 flags input 2 in intervals 1 and 2; input 2 reports from interval 3 on, its join's.
  auto make = [](InputIndex i, IntervalIndex j) {
    LoadReport r{i, j, Uses{static_cast<std::uint16_t>(100 + 10 * i), static_cast<std::uint16_t>(150 + 20 * j)}};
    if (i == 1 && (j == 1 || j == 2)) r.joining_inputs = {2};
    return r;
  };
  Assigner first(three_inputs_two_computes(), {2});
  Assigner second(three_inputs_two_computes(), {2});
  std::vector<IntervalAssignment> by_first;
  std::vector<IntervalAssignment> by_second;
  for (IntervalIndex j = 0; j < 8; ++j) {
    for (InputIndex i = 0; i < 3; ++i) {
      if (i == 2 && j < 3) continue;
      for (auto& d : first.on_report(make(i, j))) by_first.push_back(d);
    }
  }
  // The second replica lags: input 2's reports reach it first (it took the decision naming
  // its join from the first replica), then the members' in reverse, a later interval first.
  for (IntervalIndex j = 3; j < 8; ++j) CHECK(second.on_report(make(2, j)).empty());
  for (IntervalIndex j = 0; j < 8; j += 2) {
    for (IntervalIndex jj : {j + 1, j}) {
      for (InputIndex i = 2; i-- > 0;) {
        for (auto& d : second.on_report(make(i, jj))) by_second.push_back(d);
      }
    }
  }
  REQUIRE(by_first.size() == 8);
  CHECK(by_first == by_second);
  CHECK(by_first[1].input_joins == std::vector<InputJoinChange>{{2, 3 * 8}});
  for (std::size_t d = 0; d < by_first.size(); ++d) {
    CAPTURE(d);
    if (d != 1) CHECK(by_first[d].input_joins.empty());
  }
}

TEST_CASE("assigner input join: the report and the decision on the wire, and what a decoder refuses", "[scheduler]") {
  const LoadReport flagged{1, 7, Uses{100, 200}, Inputs{2, 4}};
  const auto bytes = encode(flagged);
  CHECK(bytes.size() == encoded_size_of_load_report(2, 2));
  CHECK(static_cast<std::uint8_t>(bytes[2]) == 1);
  CHECK(decode_load_report(bytes) == flagged);
  // Without joining inputs the layout is the one before them (flags 0): older peers read it.
  const LoadReport plain{1, 7, Uses{100, 200}};
  const auto plain_bytes = encode(plain);
  CHECK(plain_bytes.size() == encoded_size_of_load_report(2));
  CHECK(static_cast<std::uint8_t>(plain_bytes[2]) == 0);
  CHECK(decode_load_report(plain_bytes) == plain);
  CHECK_THROWS_AS(decode_load_report(std::span(bytes).first(bytes.size() - 1)), netio::Error);
  auto flagged_empty = plain_bytes;
  flagged_empty[2] = std::byte{1};
  for (int k = 0; k < 4; ++k) flagged_empty.push_back(std::byte{0});
  CHECK_THROWS_WITH(decode_load_report(flagged_empty), Catch::Contains("0 joining inputs"));

  // An assignment naming an input join alone (flag 0x02) and with a compute change (0x03).
  const IntervalAssignment joins{9, {4, 4}, {}, {{2, 72}}};
  const auto joins_bytes = encode(joins);
  CHECK(joins_bytes.size() == encoded_size_of_assignment(2, 0, 1));
  CHECK(static_cast<std::uint8_t>(joins_bytes[2]) == 2);
  CHECK(decode_assignment(joins_bytes) == joins);
  const IntervalAssignment both{9, {8, 0}, {{1, false, 72}}, {{2, 72}, {0, 72}}};
  const auto both_bytes = encode(both);
  CHECK(both_bytes.size() == encoded_size_of_assignment(2, 1, 2));
  CHECK(static_cast<std::uint8_t>(both_bytes[2]) == 3);
  CHECK(decode_assignment(both_bytes) == both);
  CHECK_THROWS_AS(decode_assignment(std::span(both_bytes).first(both_bytes.size() - 1)), netio::Error);
  auto longer = joins_bytes;
  longer.push_back(std::byte{0});
  CHECK_THROWS_AS(decode_assignment(longer), netio::Error);
  // The configuration's checks: an input out of range, a boundary other than the interval's
  // first time-slice, an input named twice.
  CHECK_NOTHROW(check_assignment(2, 8, joins, 3));
  CHECK_THROWS_WITH(check_assignment(2, 8, joins, 2), Catch::Contains("input 2 joins, out of range"));
  CHECK_THROWS_WITH(check_assignment(2, 8, IntervalAssignment{9, {4, 4}, {}, {{2, 80}}}, 3),
                    Catch::Contains("not the interval's first"));
  CHECK_THROWS_WITH(check_assignment(2, 8, IntervalAssignment{9, {4, 4}, {}, {{2, 72}, {2, 72}}}, 3),
                    Catch::Contains("twice"));
}

TEST_CASE("assigner input join: a member input flags the request until an assignment names the join", "[scheduler]") {
  InputNode input(three_inputs_two_computes(), 0, Mode::best_effort);
  for (ComputeIndex c = 0; c < 2; ++c) input.grant(c, 64);
  const Time now{0};
  auto send_interval = [&] { return netio::test::send_interval(input, 8).joining_inputs; };
  CHECK(input.request_input_join(2));
  CHECK_FALSE(input.request_input_join(2));  // asked already (every DDE replica passes it on)
  CHECK_FALSE(input.request_input_join(0));  // itself
  CHECK_THROWS_WITH(input.request_input_join(3), Catch::Contains("out of range"));
  CHECK(send_interval() == Inputs{2});
  CHECK(send_interval() == Inputs{2});
  // Interval 2's assignment names the join from time-slice 16: flagged no more.
  CHECK(input.next(now).what == InputNode::Next::What::wait_for_assignment);
  REQUIRE(input.on_assignment(IntervalAssignment{2, {4, 4}, {}, {{2, 16}}}));
  CHECK(input.input_joins_from(2) == TimesliceIndex{16});
  CHECK_FALSE(input.request_input_join(2));  // named already: a late request changes nothing
  CHECK(send_interval().empty());
  // An input join out of range is the coordinator's fault.
  CHECK_THROWS_AS(input.on_assignment(IntervalAssignment{3, {4, 4}, {}, {{3, 24}}}), netio::Error);
  // Under the fixed assignment a compute node names the boundary: no request.
  auto fixed = three_inputs_two_computes();
  fixed.assignment = Assignment::fixed;
  InputNode by_fixed(fixed, 0, Mode::best_effort);
  CHECK_THROWS_WITH(by_fixed.request_input_join(2), Catch::Contains("not under assignment by load"));
}

TEST_CASE("assigner input join: the standby input starts at the boundary its assignment names", "[scheduler]") {
  for (const auto mode : {Mode::best_effort, Mode::dfs}) {
    CAPTURE(to_string(mode));
    InputNode input(three_inputs_two_computes(), 2, mode, {}, true);
    for (ComputeIndex c = 0; c < 2; ++c) input.grant(c, 64);
    const Time now{0};
    CHECK_FALSE(input.started());
    CHECK_THROWS_WITH(input.start_at(24), Catch::Contains("under assignment by load"));
    // An assignment that names nothing for it is not kept; one that drains a compute node is
    // applied (its sends start later, so every change is in time for it).
    CHECK_FALSE(input.on_assignment(IntervalAssignment{2, {4, 4}}));
    CHECK(input.on_assignment(IntervalAssignment{2, {8, 0}, {{1, false, 16}}}));
    CHECK(input.membership().leaves_from(1) == TimesliceIndex{16});
    CHECK_FALSE(input.on_assignment(IntervalAssignment{2, {8, 0}, {{1, false, 16}}}));  // another replica's copy
    CHECK_FALSE(input.started());
    // Interval 3's names its join from time-slice 24: it starts there, in its own order.
    REQUIRE(input.on_assignment(IntervalAssignment{3, {8, 0}, {}, {{2, 24}}}));
    CHECK(input.started());
    CHECK(input.sent_count() == 24);
    const auto next = input.next(now);
    CHECK(next.what == InputNode::Next::What::send);
    CHECK(next.timeslice == input.layout().timeslice_at(2, 24));
    CHECK(input.layout().interval_of(next.timeslice) == 3);
    CHECK(next.compute == 0);
    // A lagging replica's older assignment is past for it.
    CHECK_FALSE(input.on_assignment(IntervalAssignment{2, {8, 0}, {{1, false, 16}}}));
    if (mode == Mode::dfs) continue;
    const auto first_report = netio::test::send_interval(input, 8);
    CHECK(first_report.interval == 3);              // its first report: the interval it joined at
    CHECK(first_report.in_use[0] < full_use);       // it sent to node 0 only: some of its credits out
    CHECK(first_report.in_use[1] == lost_compute);  // node 1 left at 16
    CHECK(input.next(now).what == InputNode::Next::What::wait_for_assignment);
  }
}
