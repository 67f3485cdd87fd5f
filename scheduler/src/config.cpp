// SPDX-License-Identifier: MIT
#include "netio/scheduler/config.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <cmath>
#include <string>

namespace netio::scheduler {
namespace {

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "scheduler config"};

std::string number(double value) {
  std::string text = std::to_string(value);
  while (text.size() > 1 && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::string_view to_string(DurationRule rule) noexcept { return rule == DurationRule::paper ? "paper" : "tracking"; }
std::string_view to_string(ClockRule rule) noexcept { return rule == ClockRule::paper ? "paper" : "filtered"; }
std::string_view to_string(Assignment assignment) noexcept { return assignment == Assignment::load ? "load" : "fixed"; }

void validate(const SchedulerConfig& c) {
  if (c.input_count == 0) reject("input_count must be at least 1, not 0");
  if (c.compute_count == 0) reject("compute_count must be at least 1, not 0");
  if (c.timeslices_per_interval != 0 && c.timeslices_per_interval < c.compute_count) {
    reject("timeslices_per_interval (" + std::to_string(c.timeslices_per_interval) +
           ") must be at least compute_count (" + std::to_string(c.compute_count) +
           "): an interval holds whole rounds");
  }
  if (c.timeslices_per_interval % c.compute_count != 0) {
    const std::uint64_t below = c.timeslices_per_interval - c.timeslices_per_interval % c.compute_count;
    reject("timeslices_per_interval (" + std::to_string(c.timeslices_per_interval) +
           ") must be a multiple of compute_count (" + std::to_string(c.compute_count) +
           "): an interval holds whole rounds, one time-slice per compute node (e.g. " + std::to_string(below) +
           " or " + std::to_string(below + c.compute_count) + ")");
  }
  if (c.history_length == 0) reject("history_length (hist_cnt) must be at least 1, not 0");
  if (!std::isfinite(c.speed_up_variance_threshold) || c.speed_up_variance_threshold < 0) {
    reject("speed_up_variance_threshold (ssu_TH) must be a finite number ≥ 0, not " +
           number(c.speed_up_variance_threshold));
  }
  if (!(c.speed_up_percent > 0 && c.speed_up_percent < 100)) {
    reject("speed_up_percent (ssu_pct) must be in (0, 100), not " + number(c.speed_up_percent));
  }
  if (!(c.ack_threshold > 0 && c.ack_threshold <= 1)) {
    reject("ack_threshold (θ) must be in (0, 1], not " + number(c.ack_threshold));
  }
  if (!(c.gated_ack_threshold > 0 && c.gated_ack_threshold <= 1)) {
    reject("gated_ack_threshold must be in (0, 1], not " + number(c.gated_ack_threshold));
  }
  if (!(c.max_clock_drift >= 0 && c.max_clock_drift <= 0.5)) {
    reject("max_clock_drift must be in [0, 0.5], not " + number(c.max_clock_drift));
  }
  if (c.duration_rule != DurationRule::paper && c.duration_rule != DurationRule::tracking) {
    reject("duration_rule must be paper or tracking, not " + std::to_string(static_cast<int>(c.duration_rule)));
  }
  if (c.clock_rule != ClockRule::paper && c.clock_rule != ClockRule::filtered) {
    reject("clock_rule must be paper or filtered, not " + std::to_string(static_cast<int>(c.clock_rule)));
  }
  if (c.assignment != Assignment::fixed && c.assignment != Assignment::load) {
    reject("assignment must be fixed or load, not " + std::to_string(static_cast<int>(c.assignment)));
  }
  if (c.clock_filter_length == 0) reject("clock_filter_length must be at least 1, not 0");
  if (c.recent_length == 0) reject("recent_length must be at least 1, not 0");
  if (!(c.fallback_margin >= 0 && c.fallback_margin <= 1)) {
    reject("fallback_margin must be in [0, 1], not " + number(c.fallback_margin));
  }
  if (c.fallback_window == 0) reject("fallback_window must be at least 1, not 0");
  if (c.fallback_hold == 0) reject("fallback_hold must be at least 1, not 0");
  if (c.proposal_distance < 2) {
    reject("proposal_distance (k - j) must be at least 2, not " + std::to_string(c.proposal_distance));
  }
}

}  // namespace netio::scheduler
