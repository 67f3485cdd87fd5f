// SPDX-License-Identifier: MIT
// The scheduler's configuration: the paper's defaults, and validation that names the bad
// field and its value.
#include "netio/error.hpp"
#include "netio/scheduler/config.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <string>

using netio::scheduler::SchedulerConfig;
using netio::scheduler::validate;

namespace {

SchedulerConfig layout(std::uint32_t inputs, std::uint32_t computes) {
  SchedulerConfig c;
  c.input_count = inputs;
  c.compute_count = computes;
  return c;
}

// validate() throws a netio::Error with Errc::invalid_option whose message contains `text`.
void require_rejected(const SchedulerConfig& c, const std::string& text) {
  try {
    validate(c);
    FAIL("validate() accepted a configuration that should fail with: " << text);
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    CHECK_THAT(e.what(), Catch::Contains(text));
  }
}

}  // namespace

TEST_CASE("scheduler config: the paper's defaults (Table I) and θ of its code", "[scheduler]") {
  const SchedulerConfig c;
  CHECK(c.timeslices_per_interval == 0);  // automatic: 10,000 rounded down to whole rounds
  CHECK(automatic_timeslices_per_interval == 10'000);
  CHECK(c.history_length == 10);
  CHECK(c.speed_up_variance_threshold == 10.0);
  CHECK(c.speed_up_percent == 5.0);
  CHECK(c.ack_threshold == 0.95);
  CHECK(c.proposal_distance == 2);
  CHECK(c.round_offset == 0);
  CHECK(c.max_clock_drift == 500e-6);
  // Ours: the tracking duration rule (the paper's is DurationRule::paper), over 3 intervals,
  // and the filtered clock rule (the paper's is ClockRule::paper) over 8 reports.
  CHECK(c.duration_rule == netio::scheduler::DurationRule::tracking);
  CHECK(c.recent_length == 3);
  CHECK(c.clock_rule == netio::scheduler::ClockRule::filtered);
  CHECK(c.clock_filter_length == 8);
  CHECK_NOTHROW(validate(layout(4, 4)));
}

TEST_CASE("scheduler config: an interval holds whole rounds", "[scheduler]") {
  SchedulerConfig c = layout(2, 3);
  c.timeslices_per_interval = 9'999;
  CHECK(c.rounds_per_interval() == 3333);
  CHECK(c.timeslices_in_interval() == 9999);
  CHECK_NOTHROW(validate(c));
  c.timeslices_per_interval = 3;
  CHECK(c.rounds_per_interval() == 1);
  CHECK_NOTHROW(validate(c));
}

TEST_CASE("scheduler config: the default interval holds whole rounds for every M", "[scheduler]") {
  // The default is automatic: 10,000 rounded down to whole rounds (it was 10,000, which
  // validate() refused for every M not dividing it, 3 among them).
  SchedulerConfig c = layout(2, 3);
  CHECK(c.timeslices_per_interval == 0);
  CHECK_NOTHROW(validate(c));
  CHECK(c.rounds_per_interval() == 3333);
  CHECK(c.timeslices_in_interval() == 9999);
  c = layout(2, 48);
  CHECK_NOTHROW(validate(c));
  CHECK(c.timeslices_in_interval() == 9984);
  c = layout(2, 4);
  CHECK(c.timeslices_in_interval() == 10'000);
  c = layout(2, 12'000);  // more compute nodes than the default's time-slices: one round
  CHECK_NOTHROW(validate(c));
  CHECK(c.rounds_per_interval() == 1);
  CHECK(c.timeslices_in_interval() == 12'000);
}

TEST_CASE("scheduler config: a remainder of time-slices per interval is refused, not dropped", "[scheduler]") {
  SchedulerConfig c = layout(2, 3);
  c.timeslices_per_interval = 10'000;  // 3333 rounds and one time-slice over
  require_rejected(c, "timeslices_per_interval (10000) must be a multiple of compute_count (3)");
  require_rejected(c, "9999 or 10002");
  c = layout(2, 2);
  c.timeslices_per_interval = 3;  // netio_tsbench --interval 3 --computes 2
  require_rejected(c, "timeslices_per_interval (3) must be a multiple of compute_count (2)");
}

TEST_CASE("scheduler config: bad values are rejected with the field and the value", "[scheduler]") {
  require_rejected(layout(0, 4), "input_count must be at least 1, not 0");
  require_rejected(layout(4, 0), "compute_count must be at least 1, not 0");
  SchedulerConfig c = layout(2, 8);
  c.timeslices_per_interval = 7;
  require_rejected(c, "timeslices_per_interval (7) must be at least compute_count (8)");
  c = layout(2, 2);
  c.history_length = 0;
  require_rejected(c, "history_length (hist_cnt) must be at least 1, not 0");
  c = layout(2, 2);
  c.speed_up_variance_threshold = -1;
  require_rejected(c, "speed_up_variance_threshold (ssu_TH) must be a finite number ≥ 0, not -1");
  c.speed_up_variance_threshold = std::numeric_limits<double>::quiet_NaN();
  require_rejected(c, "speed_up_variance_threshold (ssu_TH)");
  c = layout(2, 2);
  c.speed_up_percent = 100;
  require_rejected(c, "speed_up_percent (ssu_pct) must be in (0, 100), not 100");
  c.speed_up_percent = 0;
  require_rejected(c, "speed_up_percent (ssu_pct) must be in (0, 100), not 0");
  c = layout(2, 2);
  c.recent_length = 0;
  require_rejected(c, "recent_length must be at least 1, not 0");
  c = layout(2, 2);
  c.ack_threshold = 1.5;
  require_rejected(c, "ack_threshold (θ) must be in (0, 1], not 1.5");
  c.ack_threshold = 0;
  require_rejected(c, "ack_threshold (θ) must be in (0, 1], not 0");
  c = layout(2, 2);
  c.proposal_distance = 1;
  require_rejected(c, "proposal_distance (k - j) must be at least 2, not 1");
  c = layout(2, 2);
  c.max_clock_drift = 0.6;
  require_rejected(c, "max_clock_drift must be in [0, 0.5], not 0.6");
  c.max_clock_drift = -0.1;
  require_rejected(c, "max_clock_drift must be in [0, 0.5], not -0.1");
  c.max_clock_drift = 500e-6;
  c.clock_filter_length = 0;
  require_rejected(c, "clock_filter_length must be at least 1, not 0");
  c.clock_filter_length = 8;
  c.clock_rule = static_cast<netio::scheduler::ClockRule>(7);
  require_rejected(c, "clock_rule must be paper or filtered, not 7");
}
