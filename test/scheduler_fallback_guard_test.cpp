// SPDX-License-Identifier: MIT
// The DDE's safety net (extension 7): it engages when paced intervals take longer than the
// best-effort reference, holds best-effort for a while, retries, doubles its hold when the
// retry loses at once and starts it afresh after a retry that held; the Input Engine runs a
// fallback interval unpaced and without the θ gate. Worked out interval by interval.
#include "netio/error.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/deterministic_engine.hpp"
#include "netio/scheduler/fallback_guard.hpp"
#include "netio/scheduler/input_engine.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

SchedulerConfig guard_config() {
  SchedulerConfig c;
  c.input_count = 1;  // one IE: each report completes its interval
  c.compute_count = 1;
  c.timeslices_per_interval = 4;
  c.fallback_window = 3;
  c.fallback_hold = 2;
  c.fallback_margin = 0.02;
  return c;  // proposal_distance 2
}

// Two IEs, two compute nodes, intervals of one round, θ = 1: for the IE's own rules.
SchedulerConfig one_round_config() {
  SchedulerConfig c;
  c.input_count = 2;
  c.compute_count = 2;
  c.timeslices_per_interval = 2;
  c.ack_threshold = 1.0;
  return c;
}

// Interval j took `duration`; paced by a proposal of `duration` 100 unless `paced` is false.
void complete(HistoryManager& history, IntervalIndex j, Duration duration, bool paced) {
  MeasuredInterval m{j, Time{1000 * static_cast<long long>(j)}, duration, std::nullopt, 5ns};
  if (paced) m.proposed_duration = 100ns;
  REQUIRE(history.add(0, m));
}

}  // namespace

TEST_CASE("scheduler fallback: engages when pacing loses, holds, retries, doubles the hold, starts it afresh",
          "[scheduler]") {
  const auto c = guard_config();
  HistoryManager history(1, 64);
  FallbackGuard guard(c);
  // Warm-up: intervals 0..3 best-effort (no proposal), 100 ns each.
  for (IntervalIndex j = 0; j <= 3; ++j) complete(history, j, 100ns, false);
  // k = 4 (w = 2): the first decision. Reference: intervals 2 and 1 (0 opens the run): 100.
  CHECK_FALSE(guard.best_effort(4, history));
  CHECK(guard.reference() == 100ns);
  // The pacing run starts at 4; it takes 110 per interval (10 % longer than best-effort).
  // Intervals 5, 6, 7 count (4 opens the run): judged at k = 9 (w = 7).
  for (IntervalIndex k = 5; k <= 8; ++k) {
    complete(history, k - 1, 110ns, true);
    CHECK_FALSE(guard.best_effort(k, history));
  }
  complete(history, 8, 110ns, true);
  CHECK(guard.best_effort(9, history));  // 110 > 100 · 1.02: engaged, hold 2
  CHECK(guard.stats().engaged == 1);
  CHECK(guard.stats().active);
  CHECK(guard.best_effort(9, history));  // decided once
  complete(history, 9, 100ns, false);
  CHECK(guard.best_effort(10, history));
  complete(history, 10, 100ns, false);
  CHECK_FALSE(guard.best_effort(11, history));  // 11 − 9 = hold: retry
  CHECK(guard.stats().released == 1);
  CHECK(guard.stats().best_effort_intervals == 2);
  // The retry loses again (110): judged at the first check, 11 + 2 + 3 = 16 → hold doubles to 4.
  for (IntervalIndex k = 12; k <= 15; ++k) {
    complete(history, k - 1, 110ns, true);
    CHECK_FALSE(guard.best_effort(k, history));
  }
  complete(history, 15, 110ns, true);
  CHECK(guard.best_effort(16, history));
  CHECK(guard.stats().engaged == 2);
  for (IntervalIndex k = 17; k <= 19; ++k) {
    complete(history, k - 1, 100ns, false);
    CHECK(guard.best_effort(k, history));  // 17, 18, 19: within the hold of 4
  }
  complete(history, 19, 100ns, false);
  CHECK_FALSE(guard.best_effort(20, history));  // 20 − 16 = 4
  // This retry holds: paced intervals as long as best-effort's (100 ≤ 102).
  for (IntervalIndex k = 21; k <= 32; ++k) {
    complete(history, k - 1, 100ns, true);
    CHECK_FALSE(guard.best_effort(k, history));
  }
  // Then pacing loses again, long after the retry: the hold starts afresh at 2.
  complete(history, 32, 120ns, true);
  CHECK_FALSE(guard.best_effort(33, history));  // w = 31: 100, 100, 100
  complete(history, 33, 120ns, true);
  CHECK_FALSE(guard.best_effort(34, history));  // w = 32: 120, 100, 100: median 100
  complete(history, 34, 120ns, true);
  CHECK(guard.best_effort(35, history));  // w = 33: 120, 120, 100: median 120
  CHECK(guard.stats().engaged == 3);
  complete(history, 35, 100ns, false);
  CHECK(guard.best_effort(36, history));
  complete(history, 36, 100ns, false);
  CHECK_FALSE(guard.best_effort(37, history));  // 37 − 35 = 2: hold 2 again
  CHECK(guard.stats().released == 3);
  CHECK(guard.stats().best_effort_intervals == 2 + 4 + 2);
}

TEST_CASE("scheduler fallback: within the margin, or switched off, pacing stays", "[scheduler]") {
  auto c = guard_config();
  HistoryManager history(1, 64);
  for (IntervalIndex j = 0; j <= 3; ++j) complete(history, j, 100ns, false);
  FallbackGuard guard(c);
  c.fallback = false;
  FallbackGuard off(c);
  for (IntervalIndex k = 4; k <= 20; ++k) {
    // every third 110, the rest 102: the median of any three is 102, at the margin
    if (k >= 6) complete(history, k - 2, (k - 2) % 3 == 0 ? 110ns : 102ns, true);
    CHECK_FALSE(guard.best_effort(k, history));
  }
  for (IntervalIndex j = 19; j <= 30; ++j) complete(history, j, 150ns, true);
  CHECK_FALSE(off.best_effort(32, history));
  CHECK(off.stats().engaged == 0);
  CHECK(guard.best_effort(32, history));
}

TEST_CASE("scheduler fallback: bad settings are refused", "[scheduler]") {
  auto c = guard_config();
  c.fallback_margin = 1.5;
  CHECK_THROWS_AS(FallbackGuard(c), netio::Error);
  c = guard_config();
  c.fallback_window = 0;
  CHECK_THROWS_AS(FallbackGuard(c), netio::Error);
  c = guard_config();
  c.fallback_hold = 0;
  CHECK_THROWS_AS(FallbackGuard(c), netio::Error);
}

TEST_CASE("scheduler fallback: the proposal's flag on the wire", "[scheduler]") {
  const Proposal p{7, Time{123}, 456ns, true};
  const auto bytes = encode(p);
  CHECK(static_cast<unsigned>(bytes[2]) == 1);  // flag bit 0
  CHECK(decode_proposal(bytes) == p);
  CHECK_FALSE(decode_proposal(encode(Proposal{7, Time{123}, 456ns, false})).best_effort);
  const Proposal gated{7, Time{123}, 456ns, true, true};  // extension 10: flag bit 1 beside bit 0
  CHECK(static_cast<unsigned>(encode(gated)[2]) == 3);
  CHECK(decode_proposal(encode(gated)) == gated);
  auto bad = bytes;
  bad[2] = std::byte{0x02};  // the θ gate without best-effort
  CHECK_THROWS_AS(decode_proposal(bad), netio::Error);
  bad[2] = std::byte{0x04};
  CHECK_THROWS_AS(decode_proposal(bad), netio::Error);
}

TEST_CASE("scheduler fallback: the IE runs a fallback interval unpaced and without the θ gate", "[scheduler]") {
  InputEngine ie(one_round_config(), 0);
  CHECK(ie.on_proposal(Proposal{0, Time{1000}, 400ns, true}));
  // interval 0: best-effort at once, though its proposed start is 1000
  auto d = ie.next_send(Time{10});
  CHECK(d.action == SendDecision::Action::send);
  CHECK(d.best_effort);
  ie.on_sent(0, Time{10});
  ie.on_sent(1, Time{20});
  // no acknowledgement yet, and still interval 1 may start (θ = 1 would wait): it is derived
  // from the fallback proposal, so best-effort as well
  CHECK(ie.current_interval() == 1);
  CHECK(ie.plan(1)->best_effort);
  d = ie.next_send(Time{30});
  CHECK(d.action == SendDecision::Action::send);
  ie.on_sent(2, Time{30});
  CHECK_FALSE(ie.on_acknowledged(0, Time{500}));
  const auto done = ie.on_acknowledged(1, Time{600});
  REQUIRE(done);
  // what interval 0 took is until interval 1 started (30 − 10), not until its last
  // acknowledgement; it was not paced, so no proposed duration
  CHECK(done->report.duration == 20ns);
  CHECK_FALSE(done->report.proposed_duration);
}

TEST_CASE("scheduler fallback: the DDE's proposals carry the guard's decision", "[scheduler]") {
  auto c = guard_config();
  DeterministicEngine dde(c);
  // Interval j: starts at 1000·j, the IE paced at 100 from interval 4 on; they take 100
  // best-effort, 130 paced. Requests for j + 2 after each report.
  std::vector<bool> best_effort;
  for (IntervalIndex j = 0; j <= 14; ++j) {
    MetadataReport r{0, j, Time{1000 * static_cast<long long>(j)}, j >= 4 ? 130ns : 100ns, 5ns, std::nullopt};
    if (j >= 4) r.proposed_duration = 100ns;
    dde.on_report(r, r.start + r.duration + 5ns);
    for (const auto& p : dde.on_request(ProposalRequest{0, j + 2})) best_effort.push_back(p.proposal.best_effort);
  }
  // Proposals for 4..16 (the tracking rule's first is interval 4, from the window 0..2).
  // The pacing run starts at 4 and is judged at k = 4 + 2 + 3 = 9 (intervals 5..7, 130 against
  // the warm-up's 100): 9 and 10 best-effort; 11 retries, judged at 16: loses again.
  const std::vector<bool> expected{false, false, false, false, false, true, true,
                                   false, false, false, false, false, true};
  CHECK(best_effort == expected);
  CHECK(dde.fallback().stats().engaged == 2);
  CHECK(dde.fallback().stats().released == 1);
}

namespace {

// Two IEs, two compute nodes, intervals of two rounds: pacing's offsets put a time-slice's
// contributions (M − 1)/M of a round apart, 100 / 2 / 2 = 25 at a reference of 100.
SchedulerConfig spread_config() {
  auto c = guard_config();
  c.input_count = 2;
  c.compute_count = 2;
  c.timeslices_per_interval = 4;
  return c;
}

// Interval j took `duration` at both IEs; their probe acknowledgements `spread` apart.
void complete_both(HistoryManager& history, IntervalIndex j, Duration duration, Duration spread, bool paced) {
  for (InputIndex i = 0; i < 2; ++i) {
    MeasuredInterval m{j, Time{1000 * static_cast<long long>(j)}, duration, std::nullopt, 5ns, std::nullopt};
    if (paced) m.proposed_duration = 100ns;
    m.probe_acknowledged = m.start + 50ns + (i == 1 ? spread : 0ns);
    (void)history.add(i, m);
  }
}

}  // namespace

TEST_CASE("scheduler fallback: best-effort while its spread beats pacing's floor, pacing once it does not",
          "[scheduler]") {
  const auto c = spread_config();
  HistoryManager history(2, 64);
  FallbackGuard guard(c);
  // Warm-up 0..3: 100 each, best-effort's probe spread 5 (the IEs' packets interleaved).
  for (IntervalIndex j = 0; j <= 3; ++j) complete_both(history, j, 100ns, 5ns, false);
  // k = 4: reference 100, its spread 5; pacing's floor 100·(2 − 1)/(2·2) = 25, and 5 < 25/4:
  // best-effort from the first decision on, counted.
  CHECK(guard.best_effort(4, history));
  CHECK(guard.reference_spread() == 5ns);
  CHECK(guard.paced_spread_floor() == 25ns);
  CHECK(guard.stats().engaged == 1);
  CHECK(guard.stats().engaged_on_spread == 1);
  // No hold: it stays best-effort as long as the spread does (hold 2 is long over at 9).
  for (IntervalIndex k = 5; k <= 9; ++k) {
    complete_both(history, k - 1, 100ns, 5ns, false);
    CHECK(guard.best_effort(k, history));
  }
  // Best-effort's spread grows to 20 (≥ 6.25) from interval 9 on: the reference (w, w − 1,
  // w − 2 at k = w + 2) is 5 until two of its three are 20, at k = 12 (w = 10).
  complete_both(history, 9, 100ns, 20ns, false);
  CHECK(guard.best_effort(10, history));
  complete_both(history, 10, 100ns, 20ns, false);
  CHECK(guard.best_effort(11, history));
  complete_both(history, 11, 100ns, 20ns, false);
  CHECK_FALSE(guard.best_effort(12, history));
  CHECK(guard.reference_spread() == 20ns);
  CHECK(guard.stats().released == 1);
  // Paced intervals (12 on) do not move the reference: pacing stays while it keeps up, even
  // with a spread of 30.
  for (IntervalIndex k = 13; k <= 20; ++k) {
    complete_both(history, k - 1, 100ns, 30ns, true);
    CHECK_FALSE(guard.best_effort(k, history));
  }
  CHECK(guard.stats().engaged == 1);
  CHECK(guard.stats().best_effort_intervals == 8);  // 4..11
}

TEST_CASE("scheduler fallback: the spread rule switched off, or best-effort's spread at the floor", "[scheduler]") {
  auto c = spread_config();
  HistoryManager narrow(2, 64);
  HistoryManager at_floor(2, 64);
  for (IntervalIndex j = 0; j <= 3; ++j) {
    complete_both(narrow, j, 100ns, 5ns, false);
    complete_both(at_floor, j, 100ns, 7ns, false);  // ≥ 25 / 4: pacing may win
  }
  CHECK_FALSE(FallbackGuard(c).best_effort(4, at_floor));
  c.fallback_on_spread = false;
  FallbackGuard off(c);
  CHECK_FALSE(off.best_effort(4, narrow));
  CHECK(off.stats().engaged == 0);
}

TEST_CASE("scheduler fallback: the IEs' probe acknowledgements make the DDE's spread", "[scheduler]") {
  auto c = spread_config();
  c.ack_threshold = 1.0;
  InputEngine ie(c, 1);
  // Interval 0 (4 time-slices, 2 rounds): the probe is time-slice 0·4 + (2/2)·2 + 0 = 2.
  REQUIRE(ie.layout().probe_timeslice(0) == 2);
  CHECK(ie.layout().probe_timeslice(1) == 4 + 2 + 1);
  for (long long s = 0; s < 4; ++s) {
    const auto d = ie.next_send(Time{100 + 10 * s});
    ie.on_sent(d.timeslice, Time{100 + 10 * s});
  }
  CHECK_FALSE(ie.on_acknowledged(0, Time{200}));
  CHECK_FALSE(ie.on_acknowledged(1, Time{210}));
  CHECK_FALSE(ie.on_acknowledged(2, Time{260}));
  const auto done = ie.on_acknowledged(3, Time{270});
  REQUIRE(done);
  CHECK(done->report.probe_acknowledged == 160ns);  // 260 − tm 100
  // on the wire
  CHECK(decode_metadata_report(encode(done->report)) == done->report);
  // The DDE: IE 0's probe at 100 + 150, IE 1's at 100 + 160, clocks alike: a spread of 10.
  DeterministicEngine dde(c);
  MetadataReport r0 = done->report;
  r0.input = 0;
  r0.probe_acknowledged = 150ns;
  dde.on_report(r0, Time{300});
  dde.on_report(done->report, Time{300});
  REQUIRE(dde.history().find(0));
  CHECK(dde.history().find(0)->probe_spread == 10ns);
}

TEST_CASE("scheduler fallback: on the spread rule the DDE proposes gated best-effort intervals", "[scheduler]") {
  const auto c = spread_config();
  DeterministicEngine dde(c);
  // Intervals 0..4 best-effort, 100 long, the IEs' probe acknowledgements 5 apart (pacing's
  // floor: 25); each IE asks for j + 2 after its report.
  std::vector<Proposal> proposals;
  for (IntervalIndex j = 0; j <= 4; ++j) {
    for (InputIndex i = 0; i < 2; ++i) {
      MetadataReport r{i, j, Time{1000 * static_cast<long long>(j)}, 100ns, 5ns, std::nullopt};
      r.probe_acknowledged = 50ns + (i == 1 ? 5ns : 0ns);
      for (const auto& p : dde.on_report(r, r.start + r.duration + 5ns)) proposals.push_back(p.proposal);
      for (const auto& p : dde.on_request(ProposalRequest{i, j + 2})) proposals.push_back(p.proposal);
    }
  }
  REQUIRE(proposals.size() == 6);  // 4, 5 and 6 for both IEs
  for (const auto& p : proposals) {
    CHECK(p.best_effort);
    CHECK(p.gated);
  }
  CHECK(dde.fallback().stats().engaged_on_spread == 1);
}

TEST_CASE("scheduler fallback: a gated best-effort interval keeps a gate and is measured to its end", "[scheduler]") {
  InputEngine ie(one_round_config(), 0);
  CHECK(ie.on_proposal(Proposal{0, Time{1000}, 400ns, true, true}));
  auto d = ie.next_send(Time{10});  // unpaced: at once, though proposed for 1000
  CHECK(d.action == SendDecision::Action::send);
  CHECK(d.best_effort);
  ie.on_sent(0, Time{10});
  ie.on_sent(1, Time{20});
  CHECK(ie.next_send(Time{30}).action == SendDecision::Action::wait_for_acknowledgements);  // θ = 1
  CHECK_FALSE(ie.on_acknowledged(0, Time{500}));
  const auto done = ie.on_acknowledged(1, Time{600});
  REQUIRE(done);
  CHECK(ie.current_interval() == 1);
  CHECK(done->report.duration == 590ns);  // to the last acknowledgement, as before any proposal
  CHECK_FALSE(done->report.proposed_duration);
}

TEST_CASE("scheduler fallback: a gated best-effort interval starts the next on its last acknowledgement, not at θ",
          "[scheduler]") {
  // 4 time-slices per interval and θ 0.5: an unproposed interval lets the next start after 2
  // acknowledgements, a gated one (gated_ack_threshold 1) after all 4, so that the inputs
  // start it together, when the network has carried the whole interval.
  auto c = spread_config();
  c.ack_threshold = 0.5;
  const auto send_all = [](InputEngine& ie, IntervalIndex j, long long at) {
    for (long long s = 0; s < 4; ++s) {
      const auto d = ie.next_send(Time{at + s});
      REQUIRE(d.action == SendDecision::Action::send);
      ie.on_sent(d.timeslice, Time{at + s});
    }
    CHECK(ie.current_interval() == j);
    CHECK(ie.next_send(Time{at + 4}).action == SendDecision::Action::wait_for_acknowledgements);
  };
  InputEngine ie(c, 0);
  // Interval 0, before any proposal: θ·4 = 2 acknowledgements release interval 1.
  send_all(ie, 0, 0);
  CHECK_FALSE(ie.on_acknowledged(0, Time{100}));
  CHECK(ie.current_interval() == 0);
  CHECK_FALSE(ie.on_acknowledged(1, Time{110}));
  CHECK(ie.current_interval() == 1);
  CHECK(ie.on_proposal(Proposal{1, Time{0}, 400ns, true, true}));  // the spread rule's: gated
  send_all(ie, 1, 120);
  CHECK(ie.layout().interval_of(5) == 1);
  CHECK_FALSE(ie.on_acknowledged(4, Time{200}));
  CHECK_FALSE(ie.on_acknowledged(5, Time{210}));
  CHECK(ie.current_interval() == 1);  // θ reached, the gated interval's gate not
  CHECK(ie.next_send(Time{215}).action == SendDecision::Action::wait_for_acknowledgements);
  CHECK_FALSE(ie.on_acknowledged(6, Time{220}));
  CHECK(ie.current_interval() == 1);
  CHECK_FALSE(ie.on_acknowledged(2, Time{225}));  // interval 0's, late: no matter to 1's gate
  CHECK(ie.current_interval() == 1);
  CHECK(ie.on_acknowledged(3, Time{228}));  // interval 0 complete: its report
  const auto done = ie.on_acknowledged(7, Time{230});
  REQUIRE(done);
  CHECK(ie.current_interval() == 2);
  CHECK(done->report.duration == 110ns);  // tm 120 to the last acknowledgement, 230
  // gated_ack_threshold at θ: the gated interval is released as the unproposed one was.
  c.gated_ack_threshold = 0.5;
  InputEngine at_theta(c, 0);
  send_all(at_theta, 0, 0);
  at_theta.on_acknowledged(0, Time{100});
  at_theta.on_acknowledged(1, Time{110});
  CHECK(at_theta.on_proposal(Proposal{1, Time{0}, 400ns, true, true}));
  send_all(at_theta, 1, 120);
  at_theta.on_acknowledged(4, Time{200});
  CHECK(at_theta.current_interval() == 1);
  at_theta.on_acknowledged(5, Time{210});
  CHECK(at_theta.current_interval() == 2);
  c.gated_ack_threshold = 0;
  CHECK_THROWS_WITH(InputEngine(c, 0), Catch::Contains("gated_ack_threshold must be in (0, 1], not 0"));
}
