// SPDX-License-Identifier: MIT
// Compute nodes draining and joining under assignment by load (issue 51, item 3): the
// coordinator (Assigner) names the boundary from the inputs' flags in their load reports, in
// hand-computed cases (a drain: share 0 from the decided interval on and the change named; a
// join: a fair share at once; a flag for a node gone ignored; replicas agreeing whatever the
// order), the decision on the wire, and the input node flagging a request and applying the
// named change before it sends into the interval.
#include "netio/error.hpp"
#include "netio/scheduler/assigner.hpp"
#include "netio/scheduler/assignment_messages.hpp"
#include "netio/scheduler/input_node.hpp"
#include "support/load_assignment.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace netio::scheduler;

namespace {

// 2 inputs × 4 compute nodes, 120 time-slices per interval: a fair share is 30 of 4 nodes, 40
// of 3, so that no rounding is carried and the shares are exact by hand.
SchedulerConfig config_2x4() { return netio::test::by_load(2, 4, 120); }

using Shares = std::vector<std::uint32_t>;
using Uses = std::vector<std::uint16_t>;

// Input 0 reports `first`, input 1 `second` for interval j; what that decided (one interval).
IntervalAssignment reports(Assigner& a, IntervalIndex j, const Uses& first, const Uses& second) {
  REQUIRE(a.on_report(LoadReport{0, j, first}).empty());
  auto decided = a.on_report(LoadReport{1, j, second});
  REQUIRE(decided.size() == 1);
  return decided[0];
}

}  // namespace

TEST_CASE("assigner membership: a drain flag makes the node leave two intervals on, named in the decision",
          "[scheduler]") {
  Assigner a(config_2x4());
  const Uses even{100, 100, 100, 100};
  CHECK(reports(a, 0, even, even) == IntervalAssignment{2, Shares{30, 30, 30, 30}, {}});
  // Input 0 was asked to drain node 2 while it sent interval 1: interval 3 (from time-slice
  // 3 × 120 = 360) goes to the other three, 40 each, and names the leave.
  const auto decided = reports(a, 1, Uses{100, 100, draining_compute, 100}, even);
  CHECK(decided == IntervalAssignment{3, Shares{40, 40, 0, 40}, {MembershipChange{2, false, 360}}});
  // The inputs flag it until they hold that decision (interval 2's reports), then report it
  // as no member (lost_compute): no second change, no share, for good.
  CHECK(reports(a, 2, Uses{100, 100, draining_compute, 100}, Uses{100, 100, draining_compute, 100}) ==
        IntervalAssignment{4, Shares{40, 40, 0, 40}, {}});
  CHECK(reports(a, 3, Uses{100, 100, lost_compute, 100}, Uses{100, 100, lost_compute, 100}) ==
        IntervalAssignment{5, Shares{40, 40, 0, 40}, {}});
  // A drain flag for the node gone already is ignored (a stale or repeated request).
  CHECK(reports(a, 4, Uses{100, 100, draining_compute, 100}, Uses{100, 100, lost_compute, 100}) ==
        IntervalAssignment{6, Shares{40, 40, 0, 40}, {}});
  // Without a flag the same reports keep it (the flag is what makes it leave).
  Assigner b(config_2x4());
  (void)reports(b, 0, even, even);
  CHECK(reports(b, 1, even, even) == IntervalAssignment{3, Shares{30, 30, 30, 30}, {}});
}

TEST_CASE("assigner membership: a join flag gives a standby slot its fair share two intervals on", "[scheduler]") {
  Assigner a(config_2x4());
  // Slot 3 is a standby slot: not a member, reported so (lost_compute): no share.
  const Uses out{100, 100, 100, lost_compute};
  CHECK(reports(a, 0, out, out) == IntervalAssignment{2, Shares{40, 40, 40, 0}, {}});
  // Input 1 was asked to join slot 3 while it sent interval 1: it joins from interval 3 with a
  // fair share at once (a new node, its buffer empty).
  CHECK(reports(a, 1, out, Uses{100, 100, 100, joining_compute}) ==
        IntervalAssignment{3, Shares{30, 30, 30, 30}, {MembershipChange{3, true, 360}}});
  // Interval 2's reports, made before the inputs held that decision, still say it is out or
  // joining: it keeps its share (those reports measured it before it joined), no second join.
  CHECK(reports(a, 2, out, Uses{100, 100, 100, joining_compute}) == IntervalAssignment{4, Shares{30, 30, 30, 30}, {}});
  // From its first interval on it is measured as any node.
  CHECK(reports(a, 3, Uses{100, 100, 100, 100}, Uses{100, 100, 100, 100}) ==
        IntervalAssignment{5, Shares{30, 30, 30, 30}, {}});
  // Without the flag it stays out.
  Assigner b(config_2x4());
  (void)reports(b, 0, out, out);
  CHECK(reports(b, 1, out, out) == IntervalAssignment{3, Shares{40, 40, 40, 0}, {}});
}

TEST_CASE("assigner membership: replicas name the same changes whatever order the reports arrive in", "[scheduler]") {
  auto config = config_2x4();
  config.input_count = 3;
  // Input i's report of interval j: node 1 asked input 2 to drain it in interval 3, slot 3 a
  // standby slot that asked input 0 to join in interval 1; the flags stay until the decisions
  // (intervals 3 and 5) could have reached the inputs.
  auto use = [](InputIndex i, IntervalIndex j) {
    Uses in_use{static_cast<std::uint16_t>(100 + 10 * i), static_cast<std::uint16_t>(200 + 20 * j), 150, lost_compute};
    if (i == 0 && j >= 1 && j < 3) in_use[3] = joining_compute;
    if (j >= 3) in_use[3] = 120;
    if (i == 2 && j >= 3 && j < 5) in_use[1] = draining_compute;
    if (j >= 5) in_use[1] = lost_compute;
    return LoadReport{i, j, in_use};
  };
  Assigner first(config);
  Assigner second(config);
  std::vector<IntervalAssignment> by_first;
  std::vector<IntervalAssignment> by_second;
  for (IntervalIndex j = 0; j < 8; ++j) {
    for (InputIndex i = 0; i < 3; ++i) {
      for (auto& d : first.on_report(use(i, j))) by_first.push_back(d);
    }
  }
  for (IntervalIndex j = 0; j < 8; j += 2) {  // inputs in reverse, a later interval first
    for (InputIndex i = 3; i-- > 0;) {
      for (auto& d : second.on_report(use(i, j + 1))) by_second.push_back(d);
    }
    for (InputIndex i = 3; i-- > 0;) {
      for (auto& d : second.on_report(use(i, j))) by_second.push_back(d);
    }
  }
  REQUIRE(by_first.size() == 8);
  CHECK(by_first == by_second);
  CHECK(by_first[1].changes == std::vector<MembershipChange>{{3, true, 3 * 120}});
  CHECK(by_first[3].changes == std::vector<MembershipChange>{{1, false, 5 * 120}});
  for (std::size_t d = 0; d < by_first.size(); ++d) {
    CAPTURE(d);
    if (d != 1 && d != 3) CHECK(by_first[d].changes.empty());
    CHECK((by_first[d].shares[3] > 0) == (d >= 1));   // joined from interval 3 (decision 1)
    CHECK((by_first[d].shares[1] == 0) == (d >= 3));  // gone from interval 5 (decision 3)
  }
}

TEST_CASE("assigner membership: an assignment naming changes on the wire, and what a decoder refuses", "[scheduler]") {
  const IntervalAssignment named{9, {3, 0, 5}, {{1, false, 72}, {2, true, 72}}};
  const auto bytes = encode(named);
  CHECK(bytes.size() == encoded_size_of_assignment(3, 2));
  CHECK(decode_assignment(bytes) == named);
  // Without changes the layout is the one before them (flags 0): older peers read it.
  const IntervalAssignment plain{9, {3, 3, 2}};
  const auto plain_bytes = encode(plain);
  CHECK(plain_bytes.size() == encoded_size_of_assignment(3));
  CHECK(static_cast<std::uint8_t>(plain_bytes[2]) == 0);
  CHECK(decode_assignment(plain_bytes) == plain);
  // A change truncated or with bytes left over; a joins byte that is neither 0 nor 1; the flag
  // with no changes; more changes than nodes.
  CHECK_THROWS_AS(decode_assignment(std::span(bytes).first(bytes.size() - 1)), netio::Error);
  auto longer = bytes;
  longer.push_back(std::byte{0});
  CHECK_THROWS_AS(decode_assignment(longer), netio::Error);
  auto bad_joins = bytes;
  bad_joins.back() = std::byte{2};
  CHECK_THROWS_WITH(decode_assignment(bad_joins), Catch::Contains("joins byte is 2"));
  auto flagged_empty = plain_bytes;
  flagged_empty[2] = std::byte{1};
  for (int k = 0; k < 4; ++k) flagged_empty.push_back(std::byte{0});
  CHECK_THROWS_WITH(decode_assignment(flagged_empty), Catch::Contains("0 membership changes"));
  const IntervalAssignment too_many{9, {8}, {{0, false, 72}, {0, true, 80}}};
  CHECK_THROWS_WITH(decode_assignment(encode(too_many)), Catch::Contains("2 membership changes for 1"));
  // The configuration's checks: a slot out of range, a boundary other than the interval's
  // first time-slice, two changes of one slot.
  CHECK_NOTHROW(check_assignment(3, 8, named));
  CHECK_THROWS_WITH(check_assignment(3, 8, IntervalAssignment{9, {3, 0, 5}, {{3, false, 72}}}),
                    Catch::Contains("out of range"));
  CHECK_THROWS_WITH(check_assignment(3, 8, IntervalAssignment{9, {3, 0, 5}, {{1, false, 80}}}),
                    Catch::Contains("not the interval's first"));
  CHECK_THROWS_WITH(check_assignment(3, 8, IntervalAssignment{9, {3, 0, 5}, {{1, false, 72}, {1, true, 72}}}),
                    Catch::Contains("twice"));
}

TEST_CASE("assigner membership: an input flags a request until an assignment names it, then routes by it",
          "[scheduler]") {
  const auto config = netio::test::by_load(1, 4, 8);
  InputNode input(config, 0, Mode::best_effort, {3});  // slot 3 on standby
  for (ComputeIndex c = 0; c < 4; ++c) input.grant(c, 64);
  const Time now{0};
  auto send_interval = [&] { return netio::test::send_interval(input, 8).in_use; };
  CHECK(input.request_change(2, false));        // node 2 drains
  CHECK_FALSE(input.request_change(2, false));  // asked already (every input passes it on)
  CHECK(input.request_change(3, true));         // standby slot 3 joins
  CHECK_THROWS_WITH(input.request_change(1, true), Catch::Contains("not a standby slot"));
  CHECK(send_interval()[2] == draining_compute);
  const auto interval1 = send_interval();
  CHECK(interval1[2] == draining_compute);
  CHECK(interval1[3] == joining_compute);
  // Interval 2's assignment names both: node 2 gives way to slot 3 from time-slice 16.
  CHECK(input.next(now).what == InputNode::Next::What::wait_for_assignment);
  REQUIRE(input.on_assignment(IntervalAssignment{2, {2, 2, 0, 4}, {{2, false, 16}, {3, true, 16}}}));
  CHECK(input.membership().leaves_from(2) == 16);
  CHECK(input.membership().joins_from(3) == 16);
  CHECK_FALSE(input.request_change(2, false));  // named already: a late request changes nothing
  std::vector<std::uint32_t> got(4, 0);
  for (int k = 0; k < 8; ++k) {
    const auto next = input.next(now);
    REQUIRE(next.what == InputNode::Next::What::send);
    ++got[next.compute];
    input.on_sent(next.timeslice, now);
  }
  CHECK(got == std::vector<std::uint32_t>{2, 2, 0, 4});
  const auto interval2 = input.take_load_report();
  REQUIRE(interval2);
  CHECK(interval2->in_use[2] == lost_compute);  // no member any more
  CHECK(interval2->in_use[3] < full_use);       // a member: its use
  // A change the membership refuses (slot 2 leaving again) is the coordinator's fault.
  CHECK_THROWS_AS(input.on_assignment(IntervalAssignment{3, {2, 2, 2, 2}, {{2, false, 24}}}), netio::Error);
  // Under the fixed assignment the node names its boundary: no request.
  auto fixed = config;
  fixed.assignment = Assignment::fixed;
  InputNode by_fixed(fixed, 0, Mode::best_effort);
  CHECK_THROWS_WITH(by_fixed.request_change(2, false), Catch::Contains("not under assignment by load"));
}
