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
  auto bad = bytes;
  bad[2] = std::byte{0x02};
  CHECK_THROWS_AS(decode_proposal(bad), netio::Error);
}

TEST_CASE("scheduler fallback: the IE runs a fallback interval unpaced and without the θ gate", "[scheduler]") {
  SchedulerConfig c;
  c.input_count = 2;
  c.compute_count = 2;
  c.timeslices_per_interval = 2;  // one round
  c.ack_threshold = 1.0;
  InputEngine ie(c, 0);
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
