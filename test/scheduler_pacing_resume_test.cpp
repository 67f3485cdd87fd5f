// SPDX-License-Identifier: MIT
// Pacing that resumes after a fallback run starts from the last steady proposal (extension
// 11): worked out interval by interval, recent window of 3, intervals 1000 ns apart.
#include "netio/scheduler/pacing_resume.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

// Intervals first..last, each 1000 apart; paced ones (proposed 95, as tracked() below does
// from 100) took 100, the fallback run's (best-effort: none proposed) took 150.
std::vector<UnifiedInterval> window(IntervalIndex first, IntervalIndex last, IntervalIndex fallback_from,
                                    IntervalIndex fallback_to) {
  std::vector<UnifiedInterval> w;
  for (IntervalIndex j = first; j <= last; ++j) {
    const bool fallback = j >= fallback_from && j <= fallback_to;
    UnifiedInterval i;
    i.interval = j;
    i.start = Time{1000 * static_cast<long long>(j)};
    i.duration = fallback ? 150ns : 100ns;
    if (!fallback) i.proposed_duration = 95ns;
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
  CHECK(resume.apply(w, p) == p);
  CHECK_FALSE(resume.steady());

  // Steady pacing: k = 10 from 4..8, all paced: unchanged. The steady pace is 8's: proposed
  // 95, its start spaced by the median of 4, 5, 6 (100), which its proposal was made from.
  w = window(4, 8, 100, 100);
  p = tracked(10, w, 100ns);
  CHECK(resume.apply(w, p) == p);
  REQUIRE(resume.steady());
  CHECK(resume.steady() == PacingResume::Steady{8, 95ns, 100ns});

  // The guard runs 11..19 best-effort. 11's proposal, from 5..9, all paced, is not touched
  // and 9 is steady now (the rule reads the history, not the guard's decisions).
  w = window(5, 9, 11, 19);
  CHECK(resume.apply(w, tracked(11, w, 100ns)) == tracked(11, w, 100ns));
  CHECK(resume.steady()->interval == 9);

  // k = 20, paced again, from 14..18: its recent 16, 17, 18 are the fallback's (150 each).
  // Bounded: durp 95 (the steady one) instead of 142, its start one steady median (100)
  // after 18's end instead of 150.
  w = window(14, 18, 11, 19);
  p = resume.apply(w, tracked(20, w, 150ns));
  CHECK(p.duration == 95ns);
  CHECK(p.median_duration == 100ns);
  CHECK(p.start == Time{18'150 + 100});

  // Bounded while the recent window holds the fallback's intervals (to 19) or the first two
  // resumed ones (20, 21): k = 21 … 25, whatever median the window gives.
  for (IntervalIndex k = 21; k <= 25; ++k) {
    CAPTURE(k);
    w = window(k - 6, k - 2, 11, 19);
    const Duration median = k <= 23 ? 150ns : 100ns;  // 19 and older are the fallback's
    p = resume.apply(w, tracked(k, w, median));
    CHECK(p.duration == 95ns);
    CHECK(p.start == w.back().end() + 100ns);
  }
  // k = 26, from 20..24: the recent 22, 23, 24 resumed and past the first two: the rule's own
  // proposal; 24 is steady now, with the duration the IEs ran it at.
  w = window(20, 24, 11, 19);
  p = tracked(26, w, 100ns);
  p.duration = 90ns;
  CHECK(resume.apply(w, p) == p);
  CHECK(resume.steady() == PacingResume::Steady{24, 95ns, 100ns});

  // A bound that is longer than the rule's own proposal does not lengthen it; the start
  // keeps its distance's scaling (a clock-rate correction of 1 % here). A new fallback run
  // from 27: k = 31 from 25..29.
  w = window(25, 29, 27, 29);
  p = tracked(31, w, 200ns);
  p.duration = 80ns;
  p.start = w.back().end() + 202ns;
  const auto bounded = resume.apply(w, p);
  CHECK(bounded.duration == 80ns);
  CHECK(bounded.median_duration == 100ns);
  CHECK(bounded.start == w.back().end() + 101ns);
}

TEST_CASE("scheduler pacing resume: switched off, pacing resumes from the fallback's intervals", "[scheduler]") {
  // Off by its own switch; with the safety net off (the paper's DDE: no fallback runs, an
  // interval without a proposal is one the IEs took none for in time); or under assignment
  // by load (each interval's shares decided anew: a steady proposal bounds nothing).
  SchedulerConfig c;
  const int off = GENERATE(0, 1, 2);
  if (off == 0) c.resume_from_pacing = false;
  if (off == 1) c.fallback = false;
  if (off == 2) c.assignment = Assignment::load;
  CAPTURE(off);
  PacingResume resume(c);
  auto w = window(4, 8, 100, 100);
  resume.apply(w, tracked(10, w, 100ns));
  resume.apply(w, tracked(11, w, 100ns));
  w = window(14, 18, 11, 19);
  const auto p = tracked(20, w, 150ns);
  CHECK(resume.apply(w, p) == p);
}

TEST_CASE("scheduler pacing resume: replicas answering the same intervals in another order agree", "[scheduler]") {
  // One replica answers 20, 21, 22 in order after the fallback run 11..19; the other is asked
  // for 21 before 20 (an IE a whole interval ahead of another). Both resume from the same
  // steady proposal and bound the same intervals the same way.
  SchedulerConfig c;
  PacingResume in_order(c);
  PacingResume reordered(c);
  const auto steady = window(4, 8, 100, 100);
  for (auto* r : {&in_order, &reordered}) {
    r->apply(steady, tracked(10, steady, 100ns));
    const auto before = window(5, 9, 11, 19);
    r->apply(before, tracked(11, before, 100ns));
  }
  // From 26 on the rule proposes 98 at a median of 103: above the steady 95 and 100, so that
  // a bound shows.
  const auto answer = [](PacingResume& r, IntervalIndex k) {
    const auto w = window(k - 6, k - 2, 11, 19);
    auto p = tracked(k, w, k <= 23 ? 150ns : k <= 25 ? 100ns : 103ns);
    if (k >= 26) p.duration = 98ns;
    return r.apply(w, p);
  };
  std::vector<ProposedInterval> first;
  std::vector<ProposedInterval> second;
  for (const IntervalIndex k : {20, 21, 22, 23, 24, 25, 26}) first.push_back(answer(in_order, k));
  for (const IntervalIndex k : {21, 20, 22, 24, 23, 25, 26}) second.push_back(answer(reordered, k));
  std::swap(second[0], second[1]);
  std::swap(second[3], second[4]);
  CHECK(first == second);
  CHECK(first[1].duration == 95ns);  // 21: bounded in both
  CHECK(first[5].duration == 95ns);  // 25: its recent window holds 21, the second resumed one
  CHECK(first[6].duration == 98ns);  // 26: the rule's own, unbounded in both
  CHECK(first[6].median_duration == 103ns);
}
