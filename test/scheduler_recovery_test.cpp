// SPDX-License-Identifier: MIT
// How fast the DDE's proposals recover after a slow-down, by the paper's rules (section
// III-B.2 and V-B.3): the pure engine fed with intervals whose measured duration is what the
// IEs were paced at, or what the network allows when that is longer. A link that takes
// 300 ms per interval is slowed down by 25 % (400 ms) for intervals 30–39.
//
// The numbers (hand-computed with the rules of proposer.hpp, and by docs/design/scheduled-push.md's
// model): the proposals follow the slow-down with the median (6 slow intervals of 10); after
// it, the IEs are paced at 400 ms, so the measured durations stay there; the speed-up needs
// a window free of the intervals in which the proposals lagged the jump (30–36), which it
// is from the proposal of interval 48 on; then each 5 % step waits for the median of 10 to
// move (about half a window). So 10 intervals after the end the proposal is still 380 ms
// (+27 % over the link's 300), and it is within 5 % of the link only at interval 74.
#include "netio/scheduler/deterministic_engine.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <optional>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

constexpr Duration link_duration = 300ms;
constexpr Duration slow_duration = 400ms;  // the link at 75 %
constexpr IntervalIndex slow_from = 30;
constexpr IntervalIndex slow_until = 40;  // exclusive

// durp of every interval from 0 to `count`, as the DDE proposed them (none: best-effort).
std::map<IntervalIndex, std::optional<Duration>> run(std::uint32_t history, double speed_up_percent,
                                                     IntervalIndex count, DurationRule rule = DurationRule::paper,
                                                     bool faster_recovery = true) {
  SchedulerConfig c;
  c.input_count = 1;
  c.compute_count = 1;
  c.timeslices_per_interval = 1;
  c.history_length = history;
  c.speed_up_percent = speed_up_percent;
  c.duration_rule = rule;
  c.fallback = false;  // the duration rules alone: this model's IE paces whatever the flag says
  c.faster_recovery = faster_recovery;
  DeterministicEngine dde(c);
  std::map<IntervalIndex, std::optional<Duration>> proposed;
  std::map<IntervalIndex, Duration> proposals;
  Time now{0};
  for (IntervalIndex j = 0; j < count; ++j) {
    std::optional<Duration> durp;
    if (const auto it = proposals.find(j); it != proposals.end()) durp = it->second;
    proposed[j] = durp;
    const Duration link = j >= slow_from && j < slow_until ? slow_duration : link_duration;
    const Duration durm = std::max(durp.value_or(Duration{0}), link);  // paced, or bound by the link
    MetadataReport report{0, j, now, durm, Duration{0}, durp};
    now += durm;
    (void)dde.on_report(report, now);  // no latency, one clock
    for (const auto& p : dde.on_request(ProposalRequest{0, j + 2}))
      proposals[p.proposal.interval] = p.proposal.duration;
  }
  return proposed;
}

// Within a microsecond of `expected` (the proposals are rounded to the nanosecond).
bool near(std::optional<Duration> d, Duration expected) { return d && std::chrono::abs(*d - expected) < 1us; }

// The first interval from the end of the slow-down on whose proposal is within 5 % of the link.
IntervalIndex recovered(const std::map<IntervalIndex, std::optional<Duration>>& proposed) {
  for (const auto& [j, durp] : proposed) {
    if (j >= slow_until && durp && *durp <= link_duration * 105 / 100) return j;
  }
  return 0;
}

}  // namespace

TEST_CASE("scheduler recovery: after a slow-down the proposals come down by the paper's rules", "[scheduler]") {
  SECTION("hist_cnt 10, ssu_pct 5 (the paper's): 34 intervals after the end") {
    const auto p = run(10, 5, 100);
    CHECK(p.at(29) == 285ms);          // before: the speed-up under the link's 300 ms
    CHECK(p.at(36) == 350ms);          // the median of 10 is half slow
    CHECK(p.at(38) == slow_duration);  // followed
    for (IntervalIndex j = 40; j < 48; ++j) {
      INFO("interval " << j);
      CHECK(p.at(j) == slow_duration);  // paced at 400 ms, and no speed-up while the window holds 30-36
    }
    CHECK(p.at(48) == 380ms);  // the first step: 5 % of the median
    CHECK(p.at(50) == 380ms);  // 10 intervals after the end: +27 % over the link
    CHECK(p.at(53) == 380ms);  // the next step waits for the median to move
    CHECK(p.at(54) < 380ms);
    CHECK(recovered(p) == 74);
  }
  SECTION("a shorter history recovers sooner, not within 10 intervals") {
    const auto p = run(4, 5, 100);
    CHECK(p.at(40) == 380ms);  // the speed-up resumed within the slow-down
    CHECK(recovered(p) == 54);
  }
}

// Our extension (DurationRule::tracking), the same link and slow-down, worked out with the
// rule of proposer.hpp (ssu_pct 5: a kept-up interval w lets k = w + 2 be 0.95² = 0.9025 of
// durp_w, 0.95⁴ when w-2, the interval w's proposal was stepped from, kept up too and w's
// measured duration fell from w-2's with its proposal by at least 2.5 % (extension 8); one
// that did not keep up sets 0.95 × the median of the last 3 durations; "kept up" is durm ≤
// durp × 1.01, the acknowledgement latency being 0 here). Proposals two intervals ahead form
// two chains, the even and the odd intervals, each stepped from its own:
//   - before: paced at 285, the intervals take 300, not kept up: 0.95 × 300 = 285;
//   - slow-down (30–39): 33 on, the median of 3 is 400: 380, and 380 does not keep up with 400;
//   - after it (40 on), paced at 380 the intervals take 380: kept up. 42 and 43: 380 × 0.9025
//     = 342.95 (38 and 39 did not keep up: one step each);
//   - 44 from 42 and 45 from 43: 342.95 kept up and fell from 40's and 41's 380 with its
//     proposal: 342.95 × 0.95⁴ = 279.33 (within 5 % of the 285 before, 4 intervals after the
//     end, both chains);
//   - 44 and 45 take 300, not kept up: 46 is 0.95 × median(342.95, 342.95, 300) = 325.80, 47
//     0.95 × median(342.95, 300, 300) = 285; 48 from 46 (kept up, 44 did not): 325.80 × 0.9025
//     = 294.04; 47 took 300: 49 is 285; 48 took 300 against 294.04: not kept up (296.98),
//     0.95 × 300 = 285 from 49 on.
// Extension 8 as first written compared w with w-1, an interval of the other chain: 45 came
// from 43 in one step (43's proposal was no shorter than 42's), 309.51, and 47 from 45 in two,
// 279.33 (commit 0a73290; the never-worse matrix's 24 × 24 row lost 1 % more in its recovery).
TEST_CASE("scheduler recovery: the tracking rule is back within 10 intervals and never undershoots", "[scheduler]") {
  const auto p = run(10, 5, 80, DurationRule::tracking);
  const Duration before = 285ms;
  CHECK(near(p.at(29), before));
  CHECK(near(p.at(32), before));  // the median of 3 holds one slow interval
  CHECK(near(p.at(33), 380ms));   // two of three: followed within 3 intervals
  CHECK(near(p.at(41), 380ms));
  CHECK(near(p.at(42), 342'950us));
  CHECK(near(p.at(43), 342'950us));
  CHECK(near(p.at(44), 279'334us));
  CHECK(near(p.at(45), 279'334us));  // both chains back in 4 intervals
  CHECK(near(p.at(46), 325'802us));
  CHECK(near(p.at(47), before));
  CHECK(near(p.at(48), 294'036us));
  for (IntervalIndex j = 49; j < 80; ++j) {
    INFO("interval " << j);
    CHECK(near(p.at(j), before));  // settled: no creep, no oscillation
  }
  // The target: within 5 % of the duration before within 10 intervals of the end, and
  // never below 0.95 of it.
  IntervalIndex back = 0;
  for (IntervalIndex j = slow_until; j < 80; ++j) {
    const Duration d = *p.at(j);
    INFO("interval " << j);
    CHECK(d >= before * 95 / 100);
    if (back == 0 && d <= before * 105 / 100) back = j;
  }
  CHECK(back == 44);
  CHECK(back - slow_until <= 10);
}

// Without extension 8 (single steps after every kept-up interval): 42, 43: 342.95; 44, 45:
// 309.51; 46, 47: 279.33 (within 5 %, 6 intervals after the end); 46 takes 300, not kept up:
// 48 is 0.95 × median(309.51, 309.51, 300) = 294.04, 49 is 0.95 × median(309.51, 300, 300) = 285.
TEST_CASE("scheduler recovery: the tracking rule without the faster recovery steps once per interval", "[scheduler]") {
  const auto p = run(10, 5, 80, DurationRule::tracking, false);
  CHECK(near(p.at(42), 342'950us));
  CHECK(near(p.at(43), 342'950us));
  CHECK(near(p.at(44), 309'512us));
  CHECK(near(p.at(45), 309'512us));
  CHECK(near(p.at(46), 279'335us));
  CHECK(near(p.at(48), 294'037us));
  for (IntervalIndex j = 49; j < 80; ++j) {
    INFO("interval " << j);
    CHECK(near(p.at(j), 285ms));
  }
}
