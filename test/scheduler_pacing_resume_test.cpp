// SPDX-License-Identifier: MIT
// Pacing that resumes after a fallback run starts from the last steady proposal (extension
// 11): worked out interval by interval, recent window of 3, intervals 1000 ns apart.
#include "netio/scheduler/pacing_resume.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

// Intervals first..last, each 1000 apart; paced ones (proposed 100) took 100, the fallback
// run's (best-effort: none proposed) took 150.
std::vector<UnifiedInterval> window(IntervalIndex first, IntervalIndex last, IntervalIndex fallback_from,
                                    IntervalIndex fallback_to) {
  std::vector<UnifiedInterval> w;
  for (IntervalIndex j = first; j <= last; ++j) {
    const bool fallback = j >= fallback_from && j <= fallback_to;
    UnifiedInterval i;
    i.interval = j;
    i.start = Time{1000 * static_cast<long long>(j)};
    i.duration = fallback ? 150ns : 100ns;
    if (!fallback) i.proposed_duration = 100ns;
    w.push_back(i);
  }
  return w;
}

// What the tracking rule proposes for k from w = k - 2: w's end + one median, ssu_pct under it.
ProposedInterval tracked(IntervalIndex k, const std::vector<UnifiedInterval>& w, Duration median) {
  ProposedInterval p;
  p.interval = k;
  p.median_duration = median;
  p.start = w.back().end() + median;
  p.duration = Duration{median.count() * 95 / 100};
  return p;
}

}  // namespace

TEST_CASE(
    "scheduler pacing resume: after a fallback run, from the last steady proposal until the window holds "
    "resumed intervals only",
    "[scheduler]") {
  SchedulerConfig c;  // recent_length 3, proposal_distance 2
  REQUIRE(c.recent_length == 3);
  PacingResume resume(c);

  // Warm-up (no interval proposed yet): nothing to resume from, unchanged.
  auto w = window(0, 4, 0, 4);
  auto p = tracked(6, w, 150ns);
  CHECK(resume.apply(6, false, w, p) == p);
  CHECK_FALSE(resume.steady());

  // Steady pacing: k = 10 from 4..8, all paced: unchanged, and remembered.
  w = window(4, 8, 100, 100);
  p = tracked(10, w, 100ns);
  CHECK(resume.apply(10, false, w, p) == p);
  REQUIRE(resume.steady());
  CHECK(resume.steady()->duration == 95ns);

  // The guard runs 11..19 best-effort: their proposals are not touched.
  w = window(5, 9, 11, 19);
  CHECK(resume.apply(11, true, w, tracked(11, w, 100ns)) == tracked(11, w, 100ns));

  // k = 20, paced again, from 14..18: its recent 16, 17, 18 are the fallback's (150 each).
  // Bounded: durp 95 (the steady one) instead of 142, its start one steady median (100)
  // after 18's end instead of 150.
  w = window(14, 18, 11, 19);
  p = resume.apply(20, false, w, tracked(20, w, 150ns));
  CHECK(p.duration == 95ns);
  CHECK(p.median_duration == 100ns);
  CHECK(p.start == Time{18'150 + 100});

  // Bounded while the recent window holds the fallback's intervals (to 19) or the first two
  // resumed ones (20, 21): k = 21 … 25, whatever median the window gives.
  for (IntervalIndex k = 21; k <= 25; ++k) {
    CAPTURE(k);
    w = window(k - 6, k - 2, 11, 19);
    const Duration median = k <= 23 ? 150ns : 100ns;  // 19 and older are the fallback's
    p = resume.apply(k, false, w, tracked(k, w, median));
    CHECK(p.duration == 95ns);
    CHECK(p.start == w.back().end() + 100ns);
  }
  // k = 26, from 20..24: the recent 22, 23, 24 resumed and past the first two: the rule's own
  // proposal, which is the new steady one.
  w = window(20, 24, 11, 19);
  p = tracked(26, w, 100ns);
  p.duration = 90ns;
  CHECK(resume.apply(26, false, w, p) == p);
  CHECK(resume.steady()->interval == 26);
  CHECK(resume.steady()->duration == 90ns);

  // A bound that is longer than the rule's own proposal does not lengthen it; the start
  // keeps its distance's scaling (a clock-rate correction of 1 % here).
  resume.apply(27, true, w, tracked(27, w, 100ns));  // a new fallback run from 27
  w = window(25, 29, 27, 29);
  p = tracked(31, w, 200ns);
  p.duration = 80ns;
  p.start = w.back().end() + 202ns;
  const auto bounded = resume.apply(31, false, w, p);
  CHECK(bounded.duration == 80ns);
  CHECK(bounded.median_duration == 100ns);
  CHECK(bounded.start == w.back().end() + 101ns);
}

TEST_CASE("scheduler pacing resume: switched off, pacing resumes from the fallback's intervals", "[scheduler]") {
  SchedulerConfig c;
  c.resume_from_pacing = false;
  PacingResume resume(c);
  auto w = window(4, 8, 100, 100);
  resume.apply(10, false, w, tracked(10, w, 100ns));
  resume.apply(11, true, w, tracked(11, w, 100ns));
  w = window(14, 18, 11, 19);
  const auto p = tracked(20, w, 150ns);
  CHECK(resume.apply(20, false, w, p) == p);
}

TEST_CASE("scheduler pacing resume: under assignment by load, pacing resumes from the fallback's intervals",
          "[scheduler]") {
  // The same steady pace and fallback run as above: each interval's shares are decided anew,
  // so the steady proposal bounds nothing.
  SchedulerConfig c;
  c.assignment = Assignment::load;
  PacingResume resume(c);
  auto w = window(4, 8, 100, 100);
  resume.apply(10, false, w, tracked(10, w, 100ns));
  resume.apply(11, true, w, tracked(11, w, 100ns));
  w = window(14, 18, 11, 19);
  const auto p = tracked(20, w, 150ns);
  CHECK(resume.apply(20, false, w, p) == p);
}
