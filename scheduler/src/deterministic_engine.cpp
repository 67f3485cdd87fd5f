// SPDX-License-Identifier: MIT
#include "netio/scheduler/deterministic_engine.hpp"

#include "netio/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace netio::scheduler {
namespace {

// Requests kept per IE while their windows are incomplete: an IE is at most its credits
// ahead of the others, far fewer intervals than this.
constexpr std::size_t max_waiting_requests = 64;

}  // namespace

DeterministicEngine::DeterministicEngine(const SchedulerConfig& config, const std::vector<InputIndex>& standby_inputs)
    : config_((validate(config), config)),
      clocks_(config.input_count, config.history_length, config.max_clock_drift, config.clock_rule,
              config.clock_filter_length),
      // enough for the window of a request that waited while a few more intervals completed,
      // and for PacingResume's (recent_length + proposal_distance)
      history_(config.input_count,
               std::max<std::size_t>(2 * config.history_length + config.proposal_distance,
                                     config.recent_length + config.proposal_distance),
               standby_inputs),
      proposer_(config),
      guard_(config),
      resume_(config),
      waiting_(config.input_count),
      last_probe_(config.input_count) {}

void DeterministicEngine::check_input(InputIndex i) const {
  if (i >= config_.input_count) {
    throw Error(Errc::invalid_option, "DDE: input " + std::to_string(i) + " out of range (" +
                                          std::to_string(config_.input_count) + " inputs)");
  }
}

std::vector<AddressedProposal> DeterministicEngine::on_report(const MetadataReport& report, Time received_at) {
  check_input(report.input);
  // lat_i of Eq. 2 is the one-way latency of this report; the IE measured send →
  // acknowledgement, a round trip, so half of it. (The filtered clock rule leaves it out.)
  const Time end = report.start + report.duration;
  if (!clocks_.on_report(report.input, report.interval, end, report.median_ack_latency / 2, received_at)) {
    return {};  // a repeated (or reordered) report: its interval is in the history already
  }
  // The start moves into the local clock by the offset as of this report, not the drift
  // extrapolation: then it depends on nothing but this IE's reports and their arrival times
  // (this one's alone under the paper's rule), and a replica that started later records the
  // same history once its offsets rest on as many reports.
  MeasuredInterval measured{report.interval, report.start + clocks_.offset(report.input), report.duration,
                            report.proposed_duration, report.median_ack_latency};
  if (report.probe_acknowledged) measured.probe_acknowledged = measured.start + *report.probe_acknowledged;
  const auto completed = history_.add(report.input, measured);
  std::vector<AddressedProposal> out;
  if (!completed) return out;
  for (InputIndex i = 0; i < config_.input_count; ++i) {
    auto& waiting = waiting_[i];  // oldest first: answered in order, each once its window is complete
    while (!waiting.empty() && waiting.front() - config_.proposal_distance <= completed->interval) {
      const IntervalIndex k = waiting.front();
      waiting.pop_front();
      if (auto p = answer(i, k)) out.push_back(*p);
    }
  }
  return out;
}

std::vector<AddressedProposal> DeterministicEngine::on_request(const ProposalRequest& request) {
  check_input(request.input);
  std::vector<AddressedProposal> out;
  if (request.interval < config_.proposal_distance) return out;  // nothing to compute it from
  const IntervalIndex w = request.interval - config_.proposal_distance;
  const auto last = history_.last_complete();
  if (!last || w > *last) {
    // Every request waits, not only the newest: an IE that runs ahead of the others (it has no
    // proposal, so it is not paced) asks again before its first request's window completes,
    // and answering only the newest would never answer it (its late proposals are what brings
    // it back in step: InputEngine::on_proposal).
    auto& waiting = waiting_[request.input];
    if (!waiting.empty() && request.interval <= waiting.back()) return out;  // a repeat, or out of order
    waiting.push_back(request.interval);
    if (waiting.size() > max_waiting_requests) waiting.pop_front();
    return out;
  }
  if (auto p = answer(request.input, request.interval)) out.push_back(*p);
  return out;
}

ClockEcho DeterministicEngine::on_clock_probe(const ClockProbe& probe, Time received_at) {
  check_input(probe.input);
  if (probe.sample)
    throw Error(Errc::invalid_option, "DDE: an interval's clock sample where a start-handshake probe belongs");
  const auto& previous = last_probe_[probe.input];
  if (probe.previous_round_trip && previous && previous->sequence + 1 == probe.sequence) {
    // The previous probe arrived half a round trip after it left (symmetric paths).
    const Duration offset = previous->received_at - previous->sent_at - *probe.previous_round_trip / 2;
    clocks_.on_handshake(probe.input, previous->sent_at, offset);
  }
  last_probe_[probe.input] = ProbeSeen{probe.sequence, probe.sent_at, received_at};
  return ClockEcho{probe.sequence, probe.sent_at, received_at};
}

void DeterministicEngine::on_clock_sample(const ClockProbe& sample, Time received_at) {
  check_input(sample.input);
  if (!sample.sample)
    throw Error(Errc::invalid_option, "DDE: a start-handshake probe where an interval's clock sample belongs");
  (void)clocks_.on_sample(sample.input, sample.sent_at, received_at);
}

std::optional<ProposedInterval> DeterministicEngine::proposal(IntervalIndex k) const {
  if (k < config_.proposal_distance) return std::nullopt;
  const auto window = history_.window(k - config_.proposal_distance, config_.proposal_window());
  if (window.empty()) return std::nullopt;
  auto p = proposer_.propose(k, window);
  if (config_.clock_rule == ClockRule::filtered) {
    // The start lies whole measured durations (IE clocks) after w's end (local clock): at the
    // local clock's rate against the IEs', so that a replica whose clock runs at another rate
    // proposes the same instant (at 1.26 s per interval, 26 ppm apart made 33 µs).
    const Time end = window.back().end();
    p.start = end + Duration{static_cast<Duration::rep>(
                        std::llround((1.0 + clocks_.common_drift()) * static_cast<double>((p.start - end).count())))};
  }
  return p;
}

std::optional<AddressedProposal> DeterministicEngine::answer(InputIndex i, IntervalIndex k) {
  auto p = proposal(k);
  if (!p) return std::nullopt;
  // From the history alone: replicas agree whatever their guards decide.
  p = resume_.apply(history_.window(k - config_.proposal_distance, resume_.window_length()), *p);
  if (!clocks_.knows(i)) return std::nullopt;
  const bool best_effort = guard_.best_effort(k, history_);  // decided once per k, in the order asked
  return AddressedProposal{
      i, Proposal{k, clocks_.to_remote(i, p->start), p->duration, best_effort, best_effort && guard_.on_spread(k)}};
}

}  // namespace netio::scheduler
