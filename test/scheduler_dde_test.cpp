// SPDX-License-Identifier: MIT
// The DDE: requests answered once interval k - 2 is complete, proposals in each IE's clock,
// no proposals before history_length complete intervals (also after a restart), and replica
// determinism under different arrival orders.
#include "netio/error.hpp"
#include "netio/scheduler/deterministic_engine.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

SchedulerConfig config(std::uint32_t inputs, std::uint32_t history) {
  SchedulerConfig c;
  c.input_count = inputs;
  c.compute_count = 2;
  c.timeslices_per_interval = 2;
  c.history_length = history;
  c.duration_rule = DurationRule::paper;  // the paper's proposals and offsets (Eq. 2), worked out below
  c.clock_rule = ClockRule::paper;
  return c;  // proposal_distance 2
}

// A report as IE `input` sends it, and the DDE time it arrives.
struct Arrival {
  MetadataReport report;
  Time received_at;
};

// IE `input` with clock = DDE clock + skew reports interval j (DDE-clock start and duration);
// it measured a median acknowledgement latency of 40 ns (one way 20 ns), so the report
// arrives 20 ns after the interval's end.
Arrival arrival(InputIndex input, IntervalIndex j, long long start, long long duration, long long skew = 0,
                std::optional<Duration> proposed = std::nullopt) {
  MetadataReport r{input, j, Time{start + skew}, Duration{duration}, 40ns, proposed};
  return {r, Time{start + duration + 20}};
}

}  // namespace

TEST_CASE("scheduler DDE: a request waits for interval k - 2, the first intervals get no proposal", "[scheduler]") {
  DeterministicEngine dde(config(2, 2));
  // interval 0: starts 0 and 10 → 5; durations 100 140 → 120
  CHECK(dde.on_report(arrival(0, 0, 0, 100).report, arrival(0, 0, 0, 100).received_at).empty());
  CHECK(dde.on_request(ProposalRequest{0, 2}).empty());  // w = 0 is not complete: waits
  // completing 0 answers nothing: the window 0 1 would need interval -1
  CHECK(dde.on_report(arrival(1, 0, 10, 140).report, arrival(1, 0, 10, 140).received_at).empty());
  CHECK(dde.history().last_complete() == 0u);
  CHECK(dde.on_request(ProposalRequest{1, 2}).empty());
  CHECK_FALSE(dde.proposal(2));
  CHECK(dde.on_request(ProposalRequest{1, 1}).empty());  // k < 2: nothing to compute it from
}

TEST_CASE("scheduler DDE: the tracking rule proposes after recent_length intervals, the paper's after hist_cnt",
          "[scheduler]") {
  // hist_cnt 5, recent_length 3: intervals 0..4 of 100 ns each, 1000 ns apart, both IEs.
  const auto feed = [](DeterministicEngine& dde, IntervalIndex last) {
    for (IntervalIndex j = 0; j <= last; ++j) {
      for (InputIndex i = 0; i < 2; ++i) {
        const auto a = arrival(i, j, 1000 * static_cast<long long>(j), 100);
        dde.on_report(a.report, a.received_at);
      }
    }
  };
  auto c = config(2, 5);
  c.duration_rule = DurationRule::tracking;
  c.recent_length = 3;
  DeterministicEngine tracking(c);
  feed(tracking, 1);
  CHECK_FALSE(tracking.proposal(3));                             // the window 0..1 is two intervals, not three
  feed(tracking, 2);                                             // (a repeated report changes nothing)
  REQUIRE(tracking.proposal(4));                                 // 0..2: the 5th interval is the first proposed
  CHECK(tracking.proposal(4)->start == Time{2000 + 100 + 100});  // end of interval 2, then one of 100
  CHECK_FALSE(tracking.proposal(3));

  c.duration_rule = DurationRule::paper;
  DeterministicEngine paper(c);
  feed(paper, 3);
  CHECK_FALSE(paper.proposal(5));  // 0..3: four of hist_cnt 5
  feed(paper, 4);
  CHECK(paper.proposal(6));  // 0..4
}

TEST_CASE("scheduler DDE: proposals by the formula, converted to each IE's clock", "[scheduler]") {
  DeterministicEngine dde(config(2, 2));
  const long long skew = 1000;  // IE 1's clock runs 1000 ns ahead of the DDE's
  const auto feed = [&](const Arrival& a) { return dde.on_report(a.report, a.received_at); };
  // interval 0: starts 0, 10 → 5; durations 100, 140 → 120; end 125
  feed(arrival(0, 0, 0, 100));
  feed(arrival(1, 0, 10, 140, skew));
  // interval 1: starts 200, 210 → 205; durations 100, 120 → 110; end 315
  CHECK(feed(arrival(0, 1, 200, 100)).empty());
  CHECK(dde.on_request(ProposalRequest{0, 3}).empty());  // waits for interval 1
  const auto answered = feed(arrival(1, 1, 210, 120, skew));
  // the window 0 1: med_durm_hist = (110 + 120) / 2 = 115; tp_3 = 315 + (3 - 1 - 1) * 115 = 430
  REQUIRE(answered.size() == 1);
  CHECK(answered[0] == AddressedProposal{0, Proposal{3, Time{430}, 115ns}});
  const auto p = dde.proposal(3);
  REQUIRE(p);
  CHECK(p->start == Time{430});
  CHECK(p->median_duration == 115ns);
  // IE 1's offset: lt - (tm + durm) - lat = 330 - (1210 + 120) - 20 = -1000, so 430 is 1430 there
  CHECK(dde.clocks().offset(1) == -1000ns);
  CHECK(dde.on_request(ProposalRequest{1, 3}) == std::vector<AddressedProposal>{{1, Proposal{3, Time{1430}, 115ns}}});
  // interval 2: starts 400, 400; durations 110 130 → 120; end 520; window 1 2: median 115
  feed(arrival(0, 2, 400, 110));
  feed(arrival(1, 2, 400, 130, skew));
  CHECK(dde.on_request(ProposalRequest{0, 4}) == std::vector<AddressedProposal>{{0, Proposal{4, Time{635}, 115ns}}});
  // asking further ahead: k = 5 is computed from w = 3, not from 2, so it waits
  CHECK(dde.on_request(ProposalRequest{0, 5}).empty());
  CHECK_THROWS_AS(dde.on_request(ProposalRequest{2, 4}), netio::Error);
  CHECK_THROWS_AS(dde.on_report(MetadataReport{2, 0, Time{0}, 1ns, 1ns, std::nullopt}, Time{0}), netio::Error);
}

// An IE that runs ahead of the others (unpaced, it reports and asks again before the others
// complete the interval its first request waits for) gets every request answered, oldest
// first. Answering only its newest request (as before) never answered it: each completion
// found a request still further ahead, the IE never paced and stayed ahead (the ns-3
// fat-tree at 4:1: input 7 took no proposal in 10 s, DFS's spread 2.1× best-effort's).
TEST_CASE("scheduler DDE: an IE that runs ahead has every request answered, oldest first", "[scheduler]") {
  DeterministicEngine dde(config(2, 2));
  const auto feed = [&](const Arrival& a) { return dde.on_report(a.report, a.received_at); };
  // intervals 0 and 1 as above, one clock: 1 ends at 315
  feed(arrival(0, 0, 0, 100));
  feed(arrival(1, 0, 10, 140));
  feed(arrival(0, 1, 200, 100));
  feed(arrival(1, 1, 210, 120));
  // IE 0 runs on: it reports 2, 3 and 4 and asks for 4, 5 and 6 while IE 1 is still in 2
  CHECK(feed(arrival(0, 2, 400, 110)).empty());
  CHECK(dde.on_request(ProposalRequest{0, 4}).empty());  // waits for interval 2
  CHECK(feed(arrival(0, 3, 600, 110)).empty());
  CHECK(dde.on_request(ProposalRequest{0, 5}).empty());  // waits for interval 3
  CHECK(feed(arrival(0, 4, 800, 100)).empty());
  CHECK(dde.on_request(ProposalRequest{0, 6}).empty());  // waits for interval 4
  CHECK(dde.on_request(ProposalRequest{0, 6}).empty());  // a repeat waits once
  // IE 1 completes 2: starts 400, 400 → 400; durations 110, 130 → 120; end 520; the window
  // 1 2: median(110, 120) = 115; tp_4 = 520 + 115 = 635 (offsets 0: one clock)
  CHECK(feed(arrival(1, 2, 400, 130)) == std::vector<AddressedProposal>{{0, Proposal{4, Time{635}, 115ns}}});
  // IE 1 completes 3: starts 600, 610 → 605; durations 110, 130 → 120; end 725; the window
  // 2 3: median(120, 120) = 120; tp_5 = 725 + 120 = 845
  CHECK(feed(arrival(1, 3, 610, 130)) == std::vector<AddressedProposal>{{0, Proposal{5, Time{845}, 120ns}}});
  // IE 1 completes 4: starts 800, 800; durations 100, 140 → 120; end 920; the window 3 4:
  // median(120, 120) = 120; tp_6 = 920 + 120 = 1040, once
  CHECK(feed(arrival(1, 4, 800, 140)) == std::vector<AddressedProposal>{{0, Proposal{6, Time{1040}, 120ns}}});
}

namespace {

// 3 IEs, 9 intervals with irregular durations, starts and clock skews, proposals from
// interval 3 on: the history both replicas are fed.
std::vector<Arrival> history_of_three() {
  std::vector<Arrival> all;
  const long long skews[3] = {0, 250, -730};
  for (IntervalIndex j = 0; j < 9; ++j) {
    for (InputIndex i = 0; i < 3; ++i) {
      const long long start = 1000 * static_cast<long long>(j) + 7 * i + (j % 3) * i;
      const long long duration = 900 + 13 * ((j * 5 + i * 3) % 7);
      std::optional<Duration> proposed;
      if (j >= 3) proposed = Duration{910 + 5 * static_cast<long long>(j % 2)};
      all.push_back(arrival(i, j, start, duration, skews[i], proposed));
    }
  }
  return all;
}

std::vector<std::optional<ProposedInterval>> all_proposals(const DeterministicEngine& dde) {
  std::vector<std::optional<ProposedInterval>> out;
  for (IntervalIndex k = 0; k < 12; ++k) out.push_back(dde.proposal(k));
  return out;
}

}  // namespace

TEST_CASE("scheduler DDE: two replicas fed the same history in different orders propose the same", "[scheduler]") {
  const SchedulerConfig c = config(3, 3);
  const std::vector<Arrival> history = history_of_three();

  DeterministicEngine in_order(c);
  for (const Arrival& a : history) in_order.on_report(a.report, a.received_at);

  // The other replica: IEs in reverse order within an interval, and IE 2 always one interval
  // ahead of the others (its report of j + 1 comes before theirs of j). Each IE's own reports
  // stay in order, as on one connection.
  std::vector<Arrival> shuffled;
  for (IntervalIndex j = 0; j <= 9; ++j) {
    if (j < 9) shuffled.push_back(history[j * 3 + 2]);
    if (j > 0) {
      shuffled.push_back(history[(j - 1) * 3 + 1]);
      shuffled.push_back(history[(j - 1) * 3 + 0]);
    }
  }
  REQUIRE(shuffled.size() == history.size());
  DeterministicEngine reordered(c);
  for (const Arrival& a : shuffled) reordered.on_report(a.report, a.received_at);

  const auto expected = all_proposals(in_order);
  CHECK(all_proposals(reordered) == expected);
  // the replicas did propose: k = 5 .. 10 (w = 3 .. 8) have full windows; a DDE keeps
  // 2 * hist_cnt + 2 = 8 complete intervals, so interval 0 (needed for k = 4) is gone
  for (IntervalIndex k = 0; k < 12; ++k) {
    INFO("k = " << k);
    CHECK(expected[k].has_value() == (k >= 5 && k <= 10));
  }
  // and the IEs would receive the same, in their own clocks
  for (InputIndex i = 0; i < 3; ++i) {
    CHECK(in_order.on_request(ProposalRequest{i, 10}) == reordered.on_request(ProposalRequest{i, 10}));
    CHECK_FALSE(in_order.on_request(ProposalRequest{i, 10}).empty());
  }
}

TEST_CASE("scheduler DDE: a restarted DDE proposes only with history_length complete intervals, then the same",
          "[scheduler]") {
  const SchedulerConfig c = config(3, 3);
  const std::vector<Arrival> history = history_of_three();
  DeterministicEngine running(c);
  for (const Arrival& a : history) running.on_report(a.report, a.received_at);

  // The restarted replica comes up during interval 3: it misses IE 0's report of 3.
  DeterministicEngine restarted(c);
  for (const Arrival& a : history) {
    if (a.report.interval < 3 || (a.report.interval == 3 && a.report.input == 0)) continue;
    restarted.on_report(a.report, a.received_at);
  }
  // It holds 4 .. 8 complete. k = 6 (w = 4) and k = 7 (w = 5) would need interval 3: silent.
  CHECK_FALSE(restarted.proposal(6));
  CHECK_FALSE(restarted.proposal(7));
  CHECK(restarted.on_request(ProposalRequest{1, 7}).empty());
  REQUIRE(running.proposal(7));
  // From w = 6 (window 4 5 6) on, it proposes exactly what the running replica proposes.
  for (IntervalIndex k = 8; k <= 10; ++k) {
    REQUIRE(restarted.proposal(k));
    CHECK(*restarted.proposal(k) == *running.proposal(k));
  }
  // and the IEs receive the same (the clocks do not drift in this history)
  for (InputIndex i = 0; i < 3; ++i) {
    CHECK(restarted.on_request(ProposalRequest{i, 9}) == running.on_request(ProposalRequest{i, 9}));
  }
}

TEST_CASE("scheduler DDE: a repeated report changes neither the clock offset nor the history", "[scheduler]") {
  DeterministicEngine dde(config(2, 2));
  const Arrival a = arrival(0, 0, 0, 100, 500);  // IE 0 runs 500 ns ahead: offset -500
  dde.on_report(a.report, a.received_at);
  CHECK(dde.clocks().offset(0) == -500ns);
  CHECK(dde.on_report(a.report, a.received_at + 5'000ns).empty());  // the copy arrives much later
  CHECK(dde.clocks().offset(0) == -500ns);
  const Arrival b = arrival(1, 0, 0, 100);
  dde.on_report(b.report, b.received_at);
  REQUIRE(dde.history().find(0) != nullptr);
  CHECK(dde.history().find(0)->start == Time{0});  // both started at DDE time 0
}

// The start handshake: IE clock = DDE clock - 5,000 ns, 50 ns each way. Probe 0 leaves at IE
// 100 and arrives at DDE 5,150; its echo comes back at IE 200 (round trip 100); probe 1
// carries that round trip, and the DDE takes offset 5,150 - 100 - 100 / 2 = 5,000.
TEST_CASE("scheduler DDE: the start handshake sets each IE's offset before its first report", "[scheduler]") {
  DeterministicEngine dde(config(2, 3));
  CHECK_FALSE(dde.clocks().knows(1));
  const auto echo0 = dde.on_clock_probe(ClockProbe{1, 0, Time{100}, std::nullopt}, Time{5'150});
  CHECK(echo0 == ClockEcho{0, Time{100}, Time{5'150}});
  CHECK_FALSE(dde.clocks().knows(1));  // one probe: no round trip yet
  const auto echo1 = dde.on_clock_probe(ClockProbe{1, 1, Time{200}, 100ns}, Time{5'250});
  CHECK(echo1 == ClockEcho{1, Time{200}, Time{5'250}});
  REQUIRE(dde.clocks().knows(1));
  CHECK(dde.clocks().offset(1) == 5'000ns);
  CHECK(dde.clocks().to_local(1, Time{1'000}) == Time{6'000});
  CHECK_FALSE(dde.clocks().knows(0));
  // A round trip without the probe it belongs to (sequence gap) is ignored.
  dde.on_clock_probe(ClockProbe{0, 3, Time{100}, 100ns}, Time{9'999});
  CHECK_FALSE(dde.clocks().knows(0));
  // The first report's own offset replaces the handshake's; a late handshake changes nothing.
  dde.on_report(MetadataReport{1, 0, Time{1'000}, Duration{500}, 40ns, std::nullopt}, Time{6'520});
  CHECK(dde.clocks().offset(1) == 5'000ns);
  dde.on_clock_probe(ClockProbe{1, 2, Time{300}, std::nullopt}, Time{99'000});
  dde.on_clock_probe(ClockProbe{1, 3, Time{400}, 100ns}, Time{99'100});
  CHECK(dde.clocks().offset(1) == 5'000ns);
  CHECK_THROWS_AS(dde.on_clock_probe(ClockProbe{2, 0, Time{0}, std::nullopt}, Time{0}), netio::Error);
}

namespace {

// Replica A and replica B of a DDE get every report of 3 IEs, each after its own queueing:
// 10 µs for one report in four of every IE, at a different phase in each replica, and
// 0.5-2.1 ms for the others. Clocks are skewed (-730 µs … +250 µs) and do not drift;
// intervals are 10 ms apart. Returns the proposals of interval k as each IE receives them
// (its clock), from both replicas, for every k that both answer.
std::vector<std::pair<AddressedProposal, AddressedProposal>> replica_proposals(ClockRule rule) {
  SchedulerConfig c = config(3, 4);
  c.duration_rule = DurationRule::tracking;
  c.clock_rule = rule;
  DeterministicEngine a(c);
  DeterministicEngine b(c);
  const long long skews[3] = {0, 250'000, -730'000};
  const auto queued = [](InputIndex i, IntervalIndex j, long long phase) {
    return (j + i + phase) % 4 == 0 ? 10'000 : 500'000 + 400'000 * static_cast<long long>((j * 7 + i * 3) % 5);
  };
  // (IE, interval) → the proposal from each replica, whether a request or a report answered it
  std::map<std::pair<InputIndex, IntervalIndex>, AddressedProposal> from_a, from_b;
  const auto keep = [](auto& into, const std::vector<AddressedProposal>& proposals) {
    for (const auto& p : proposals) into.emplace(std::pair{p.input, p.proposal.interval}, p);
  };
  for (IntervalIndex j = 0; j < 40; ++j) {
    for (InputIndex i = 0; i < 3; ++i) {
      const long long start = 10'000'000 * static_cast<long long>(j) + 3'000 * i;
      const long long duration = 9'800'000 + 7'000 * static_cast<long long>((j * 5 + i * 3) % 7);
      const MetadataReport report{i, j, Time{start + skews[i]}, Duration{duration}, 400'000ns, std::nullopt};
      keep(from_a, a.on_report(report, Time{start + duration + queued(i, j, 0)}));
      keep(from_b, b.on_report(report, Time{start + duration + queued(i, j, 2)}));
      keep(from_a, a.on_request(ProposalRequest{i, j + 2}));
      keep(from_b, b.on_request(ProposalRequest{i, j + 2}));
    }
  }
  std::vector<std::pair<AddressedProposal, AddressedProposal>> out;
  for (const auto& [key, p] : from_a) {
    if (const auto it = from_b.find(key); it != from_b.end()) out.emplace_back(p, it->second);
  }
  return out;
}

}  // namespace

TEST_CASE("scheduler DDE: replicas whose reports queue differently propose starts within 100 µs (filtered clocks)",
          "[scheduler]") {
  const auto pairs = replica_proposals(ClockRule::filtered);
  REQUIRE(pairs.size() >= 3 * 30);  // every IE, from interval 6 on
  for (const auto& [a, b] : pairs) {
    INFO("IE " << a.input << ", interval " << a.proposal.interval);
    // A window of 8 reports holds two of every IE that queued 10 µs, in both replicas.
    if (a.proposal.interval < 10) continue;
    CHECK(std::abs((a.proposal.start - b.proposal.start).count()) <= 100'000);
  }
  // The paper's offsets take every report's queueing as it comes: the replicas are
  // milliseconds apart.
  const auto paper = replica_proposals(ClockRule::paper);
  Duration::rep widest = 0;
  for (const auto& [a, b] : paper) widest = std::max(widest, std::abs((a.proposal.start - b.proposal.start).count()));
  CHECK(widest > 1'000'000);
}
