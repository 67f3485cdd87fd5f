// SPDX-License-Identifier: MIT
// The Proposer: tp_k = (tm_w + durm_w) + (k - w - 1) * med_durm_hist, and the staged
// speed-up of Eq. 1 around its threshold. Every expected value is worked out in the comments.
#include "netio/error.hpp"
#include "netio/scheduler/proposer.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

namespace {

SchedulerConfig config(std::uint32_t history) {
  SchedulerConfig c;
  c.input_count = 2;
  c.compute_count = 2;
  c.history_length = history;
  c.duration_rule = DurationRule::paper;
  return c;  // ssu_TH 10, ssu_pct 5
}

// Intervals first.. with the given durations (and proposed durations), each starting 10,000 ns
// after the previous one.
std::vector<UnifiedInterval> window(IntervalIndex first, const std::vector<Duration>& durations,
                                    const std::vector<std::optional<Duration>>& proposed = {}) {
  std::vector<UnifiedInterval> w;
  for (std::size_t n = 0; n < durations.size(); ++n) {
    UnifiedInterval u;
    u.interval = first + n;
    u.start = Time{10'000 * static_cast<long long>(first + n)};
    u.duration = durations[n];
    if (!proposed.empty()) u.proposed_duration = proposed[n];
    w.push_back(u);
  }
  return w;
}

}  // namespace

TEST_CASE("scheduler proposer: proposed start and duration from the median of the window", "[scheduler]") {
  const Proposer proposer(config(4));
  // intervals 6..9; durations sorted 1000 1100 | 1200 1500: med_durm_hist = 1150 (the mean
  // would be 1200); w = 9 starts at 90,000 and lasts 1500: tm_w + durm_w = 91,500
  const auto w = window(6, {1000ns, 1200ns, 1100ns, 1500ns});
  const ProposedInterval p11 = proposer.propose(11, w);
  CHECK(p11.interval == 11);
  CHECK(p11.median_duration == 1150ns);
  CHECK(p11.start == Time{91'500 + 1 * 1150});  // (11 - 9 - 1) = 1 interval between
  CHECK(p11.duration == 1150ns);                // no proposed durations: no speed-up
  CHECK_FALSE(p11.speed_up.has_value());
  CHECK(proposer.propose(10, w).start == Time{91'500});  // the next interval starts at w's end
  CHECK(proposer.propose(13, w).start == Time{91'500 + 3 * 1150});
}

TEST_CASE("scheduler proposer: staged speed-up when VAR of the deviations is at most ssu_TH", "[scheduler]") {
  const Proposer proposer(config(4));
  const std::vector<Duration> durations{1000ns, 1000ns, 1000ns, 1000ns};  // med_durm_hist = 1000

  SECTION("proposals followed exactly: d = 0 0 0 0, VAR 0 → 5 % shorter") {
    const auto p = proposer.propose(11, window(6, durations, {1000ns, 1000ns, 1000ns, 1000ns}));
    REQUIRE(p.speed_up.has_value());
    CHECK(p.speed_up->mean == 0);
    CHECK(p.speed_up->variance == 0);
    CHECK(p.speed_up->applies);
    CHECK(p.duration == 950ns);             // 1000 * (100 - 5) / 100
    CHECK(p.start == Time{91'000 + 1000});  // the start still uses med_durm_hist
  }
  SECTION("a steady 5 % miss: d = 5 5 5 5, VAR 0 → still 5 % shorter (variance, not mean)") {
    const auto p = proposer.propose(11, window(6, durations, {950ns, 950ns, 950ns, 950ns}));
    CHECK(p.speed_up->mean == Approx(5.0));
    CHECK(p.speed_up->variance == Approx(0.0).margin(1e-12));
    CHECK(p.duration == 950ns);
  }
  SECTION("just below the threshold: d = 0 0 0 7 → μ 1.75, VAR 9.1875 ≤ 10 → on") {
    // VAR = (3 * 1.75² + 5.25²) / 4 = (9.1875 + 27.5625) / 4 = 9.1875
    const auto p = proposer.propose(11, window(6, durations, {1000ns, 1000ns, 1000ns, 1070ns}));
    CHECK(p.speed_up->mean == Approx(1.75));
    CHECK(p.speed_up->variance == Approx(9.1875));
    CHECK(p.speed_up->applies);
    CHECK(p.duration == 950ns);
  }
  SECTION("just above the threshold: d = 0 0 0 8 → μ 2, VAR 12 > 10 → off") {
    // VAR = (3 * 2² + 6²) / 4 = 48 / 4 = 12
    // |1000 - 920| = 80 ns = 8 % of 1000: the sign of the miss does not matter
    const auto p = proposer.propose(11, window(6, durations, {1000ns, 1000ns, 1000ns, 920ns}));
    CHECK(p.speed_up->mean == Approx(2.0));
    CHECK(p.speed_up->variance == Approx(12.0));
    CHECK_FALSE(p.speed_up->applies);
    CHECK(p.duration == 1000ns);
  }
  SECTION("exactly at the threshold counts as at most: VAR 12 with ssu_TH 12 → on") {
    SchedulerConfig c = config(4);
    c.speed_up_variance_threshold = 12;
    const auto p = Proposer(c).propose(11, window(6, durations, {1000ns, 1000ns, 1000ns, 1080ns}));
    CHECK(p.speed_up->variance == 12.0);  // d = 0 0 0 8, μ = 2: every step exact in binary
    CHECK(p.speed_up->applies);
    CHECK(p.duration == 950ns);
    c.speed_up_variance_threshold = 11.99;
    CHECK(Proposer(c).propose(11, window(6, durations, {1000ns, 1000ns, 1000ns, 1080ns})).duration == 1000ns);
  }
  SECTION("ssu_pct is configurable: 20 % off 1000 → 800") {
    SchedulerConfig c = config(4);
    c.speed_up_percent = 20;
    CHECK(Proposer(c).propose(11, window(6, durations, {1000ns, 1000ns, 1000ns, 1000ns})).duration == 800ns);
  }
  SECTION("an interval without a proposal in the window: no speed-up") {
    const auto p = proposer.propose(11, window(6, durations, {1000ns, std::nullopt, 1000ns, 1000ns}));
    CHECK_FALSE(p.speed_up.has_value());
    CHECK(p.duration == 1000ns);
  }
}

TEST_CASE("scheduler proposer: the window must be history_length consecutive intervals before k", "[scheduler]") {
  const Proposer proposer(config(4));
  CHECK_THROWS_AS(proposer.propose(11, window(7, {1ns, 1ns, 1ns})), netio::Error);  // 3, not 4
  auto gap = window(6, {1ns, 1ns, 1ns, 1ns});
  gap[3].interval = 10;
  CHECK_THROWS_AS(proposer.propose(11, gap), netio::Error);
  CHECK_THROWS_AS(proposer.propose(9, window(6, {1ns, 1ns, 1ns, 1ns})), netio::Error);  // w = 9 is not before k
}

TEST_CASE("scheduler proposer: the tracking rule's window is recent_length intervals, the paper's hist_cnt",
          "[scheduler]") {
  auto c = config(10);
  CHECK(c.proposal_window() == 10);  // the paper's rule: Eq. 1 over hist_cnt intervals
  c.duration_rule = DurationRule::tracking;
  c.recent_length = 3;
  CHECK(c.proposal_window() == 3);  // tracking reads no further back than recent_length
  c.history_length = 2;
  CHECK(c.proposal_window() == 2);  // and never further than hist_cnt
  c.history_length = 10;
  const Proposer tracking(c);
  CHECK_NOTHROW(tracking.propose(5, window(1, {1ns, 1ns, 1ns})));
  CHECK_THROWS_AS(tracking.propose(11, window(0, std::vector<Duration>(10, 1ns))), netio::Error);  // 10, not 3
}

// DurationRule::tracking (proposer.hpp): the worked cases of its three branches.
TEST_CASE("scheduler proposer: the tracking rule steps down after an interval that kept up", "[scheduler]") {
  auto c = config(4);
  c.duration_rule = DurationRule::tracking;
  c.recent_length = 3;
  const Proposer proposer(c);
  SECTION("no proposal in w: 0.95 x the median of the last 3, which also spaces the starts") {
    // window 1..3 (recent_length of them), durations 600, 800, 700: median 700
    const auto w = window(1, {600ns, 800ns, 700ns});
    const auto p = proposer.propose(5, w);
    CHECK(p.median_duration == 700ns);
    CHECK(p.duration == 665ns);                      // 700 * 0.95
    CHECK(p.start == Time{30'000 + 700 + 1 * 700});  // end of w, then one interval of 700
    CHECK_FALSE(p.speed_up.has_value());
  }
  SECTION("w kept up (took its 1000 plus 1 %): two steps of 5 % for k = w + 2") {
    auto w = window(1, {1000ns, 1000ns, 1010ns}, {1000ns, 1000ns, 1000ns});
    CHECK(proposer.propose(5, w).duration == 903ns);  // 1000 * 0.9025 = 902.5, rounded
    CHECK(proposer.propose(4, w).duration == 950ns);  // one interval ahead: one step
  }
  SECTION("w's acknowledgement latency counts as kept up") {
    auto w = window(1, {1000ns, 1000ns, 1050ns}, {1000ns, 1000ns, 1000ns});
    CHECK(proposer.propose(5, w).duration == 950ns);  // not kept up: 0.95 * median(1000, 1000, 1050)
    for (auto& i : w) i.ack_latency = 40ns;           // 1050 <= 1000 + 40 + 10, and not rising
    CHECK(proposer.propose(5, w).duration == 903ns);
  }
  SECTION("rising acknowledgement latency is a queue, not room: the proposal holds (extension 6)") {
    // w took 1050 for its 1000: within its acknowledgement latency of 40, so it "kept up";
    // but that latency rose from 20 in the interval before (by more than ssu_pct): hold 1000
    auto w = window(1, {1000ns, 1000ns, 1050ns}, {1000ns, 1000ns, 1000ns});
    w[0].ack_latency = 20ns;
    w[1].ack_latency = 20ns;
    w[2].ack_latency = 40ns;
    CHECK(proposer.propose(5, w).duration == 1000ns);
    w[1].ack_latency = 39ns;  // 40 <= 39 x 1.05: not rising, two steps down
    CHECK(proposer.propose(5, w).duration == 903ns);
    auto before = c;
    before.hold_on_rising_latency = false;  // the rule without extension 6
    w[1].ack_latency = 20ns;
    CHECK(Proposer(before).propose(5, w).duration == 903ns);
  }
  SECTION("w did not keep up: 0.95 x the median of the last 3") {
    auto w = window(1, {1200ns, 1300ns, 1250ns}, {900ns, 900ns, 900ns});
    const auto p = proposer.propose(5, w);
    CHECK(p.median_duration == 1250ns);
    CHECK(p.duration == 1188ns);  // 1187.5 rounded
  }
}
