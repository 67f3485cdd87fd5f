// SPDX-License-Identifier: MIT
#include "netio/scheduler/input_engine.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"
#include "netio/scheduler/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace netio::scheduler {
namespace {

constexpr Time acknowledged_mark = Time::min();

[[noreturn]] void reject(InputIndex self, const std::string& what) {
  netio::detail::reject(Errc::invalid_option, "input engine " + std::to_string(self), what);
}

}  // namespace

InputEngine::InputEngine(const SchedulerConfig& config, InputIndex self)
    : config_(config), layout_(config), self_(self) {
  if (self >= config.input_count) {
    reject(self, "input index out of range (" + std::to_string(config.input_count) + " inputs)");
  }
  const auto n = static_cast<double>(layout_.timeslices_per_interval());
  // ⌈θ·n⌉, at least 1; the small tolerance keeps 0.95 · 100 from becoming 96 through rounding
  const auto acknowledgements = [n](double theta) {
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(theta * n - 1e-9)));
  };
  threshold_ = acknowledgements(config.ack_threshold);
  gated_threshold_ = acknowledgements(config.gated_ack_threshold);
}

void InputEngine::start_at(IntervalIndex interval) {
  if (current_ != 0 || !in_flight_.empty()) {
    reject(self_, "start_at(" + std::to_string(interval) + ") after interval " + std::to_string(current_) + " began");
  }
  current_ = interval;
}

std::optional<IntervalPlan> InputEngine::plan(IntervalIndex interval) const {
  if (const auto it = in_flight_.find(interval); it != in_flight_.end() && it->second.sent > 0) return it->second.plan;
  if (const auto it = proposals_.find(interval); it != proposals_.end()) {
    return IntervalPlan{interval, it->second.start,       it->second.duration,
                        true,     it->second.best_effort, it->second.gated};
  }
  if (last_plan_ && last_plan_->interval < interval) {
    const auto intervals = static_cast<Duration::rep>(interval - last_plan_->interval);
    const Duration spacing = spacing_.value_or(last_plan_->duration);
    return IntervalPlan{
        interval,         last_plan_->start + intervals * spacing, last_plan_->duration, false, last_plan_->best_effort,
        last_plan_->gated};
  }
  return std::nullopt;
}

Time InputEngine::due_time(const InFlight& interval, std::uint64_t place) const {
  const IntervalPlan& plan = *interval.plan;
  const std::uint64_t m = layout_.compute_count();
  const Duration round_duration = plan.duration / static_cast<Duration::rep>(layout_.rounds_per_interval());  // durr_j
  const auto round = static_cast<Duration::rep>(place / m);
  const auto position = static_cast<Duration::rep>(place % m);
  const Time round_start = interval.start + round_duration * round;  // tr_{j,y}
  const Time due = round_start + round_duration * position / static_cast<Duration::rep>(m);
  return std::min(due, plan.end());  // from the proposed end on, best-effort
}

SendDecision InputEngine::next_send(Time now) const {
  SendDecision d;
  const auto it = in_flight_.find(current_);
  const std::uint64_t place = it == in_flight_.end() ? 0 : it->second.sent;
  if (place == layout_.timeslices_per_interval()) {
    d.action = SendDecision::Action::wait_for_acknowledgements;
    return d;
  }
  // Every input sends every time-slice and intervals hold whole rounds, so the contribution
  // at `place` of interval j is this input's contribution number j*n + place overall.
  d.timeslice = layout_.timeslice_at(self_, layout_.first_timeslice(current_) + place);
  d.compute = layout_.compute_of(d.timeslice);

  if (place == 0) {  // the interval has not started: it starts at tp_j, or at once
    const auto p = plan(current_);
    if (!p || p->best_effort || now >= p->end()) {
      d.best_effort = true;
      d.due = now;
      return d;
    }
    d.due = p->start;
  } else {
    const InFlight& interval = it->second;
    if (!interval.plan || interval.plan->best_effort || now >= interval.plan->end()) {
      d.best_effort = true;
      d.due = now;
      return d;
    }
    d.due = due_time(interval, place);
  }
  d.action = now >= d.due ? SendDecision::Action::send : SendDecision::Action::wait_until;
  return d;
}

void InputEngine::on_sent(TimesliceIndex timeslice, Time now) {
  const SendDecision expected = next_send(now);
  if (expected.action == SendDecision::Action::wait_for_acknowledgements) {
    reject(self_, "sent time-slice " + std::to_string(timeslice) + " while interval " + std::to_string(current_) +
                      " waits for acknowledgements");
  }
  if (timeslice != expected.timeslice) {
    reject(self_, "sent time-slice " + std::to_string(timeslice) + ", the next one in order is " +
                      std::to_string(expected.timeslice));
  }
  InFlight& interval = in_flight_[current_];
  if (interval.sent == 0) {  // the interval starts: tm_j, and its plan is fixed now
    if (current_ > 0) {
      if (const auto before = in_flight_.find(current_ - 1); before != in_flight_.end())
        before->second.next_start = now;
    }
    interval.start = now;
    if (config_.clock_start_samples) {
      clock_sample_ = ClockProbe{self_, static_cast<std::uint32_t>(current_), now, std::nullopt, true};
    }
    interval.plan = plan(current_);
    if (interval.plan) last_plan_ = interval.plan;
    interval.sent_at.assign(layout_.timeslices_per_interval(), Time{0});
    interval.latencies.reserve(layout_.timeslices_per_interval());
    proposals_.erase(proposals_.begin(), proposals_.upper_bound(current_));
  }
  interval.sent_at[interval.sent] = now;
  ++interval.sent;
  advance_if_released();
}

void InputEngine::advance_if_released() {
  const auto it = in_flight_.find(current_);
  if (it == in_flight_.end()) return;
  const InFlight& interval = it->second;
  if (interval.sent != layout_.timeslices_per_interval()) return;
  // A fallback interval has no θ gate: as best-effort sends. A gated one (the spread rule's,
  // extension 10) has its own, at 1 by default: on its last acknowledgement every input
  // starts the next one as the network has carried the last, all together.
  const bool best_effort = interval.plan && interval.plan->best_effort;
  const bool fallback = best_effort && !interval.plan->gated;
  const std::uint64_t gate = best_effort && interval.plan->gated ? gated_threshold_ : threshold_;
  if (fallback || interval.acknowledged >= gate) ++current_;
}

std::optional<IntervalCompletion> InputEngine::on_acknowledged(TimesliceIndex timeslice, Time now) {
  const IntervalIndex j = layout_.interval_of(timeslice);
  const auto it = in_flight_.find(j);
  if (it == in_flight_.end()) {
    reject(self_, "acknowledgement of time-slice " + std::to_string(timeslice) + " of interval " + std::to_string(j) +
                      ", which has no contribution in flight");
  }
  InFlight& interval = it->second;
  const std::uint64_t place = layout_.sequence_of(self_, timeslice) - layout_.first_timeslice(j);
  if (place >= interval.sent)
    reject(self_, "acknowledgement of time-slice " + std::to_string(timeslice) + ", not sent yet");
  if (interval.sent_at[place] == acknowledged_mark) {
    reject(self_, "second acknowledgement of time-slice " + std::to_string(timeslice));
  }
  interval.latencies.push_back(now - interval.sent_at[place]);
  if (timeslice == layout_.probe_timeslice(j)) interval.probe_acknowledged = now;
  interval.sent_at[place] = acknowledged_mark;
  ++interval.acknowledged;
  if (j == current_) advance_if_released();
  if (interval.acknowledged < layout_.timeslices_per_interval()) return std::nullopt;

  IntervalCompletion done;
  done.report.input = self_;
  done.report.interval = j;
  done.report.start = interval.start;
  const bool fallback = interval.plan && interval.plan->best_effort && !interval.plan->gated;
  // A fallback interval overlaps the next one: what it took is until the next one started.
  done.report.duration = (fallback && interval.next_start ? *interval.next_start : now) - interval.start;
  done.report.median_ack_latency = median(std::move(interval.latencies));
  if (interval.plan && !interval.plan->best_effort) done.report.proposed_duration = interval.plan->duration;
  if (interval.probe_acknowledged) done.report.probe_acknowledged = *interval.probe_acknowledged - interval.start;
  done.request = ProposalRequest{self_, j + config_.proposal_distance};
  in_flight_.erase(it);
  return done;
}

std::optional<ClockProbe> InputEngine::take_clock_sample() { return std::exchange(clock_sample_, std::nullopt); }

bool InputEngine::on_proposal(const Proposal& proposal) {
  if (proposal.duration <= Duration::zero()) return false;
  const auto it = in_flight_.find(current_);
  const bool current_started = it != in_flight_.end() && it->second.sent > 0;
  if (proposal.interval > current_ + config_.proposal_distance) return false;
  if (proposal.interval < current_ || (proposal.interval == current_ && current_started)) {
    // Too late for its own interval, but still the DDE's newest word on the schedule: the
    // intervals that follow are extrapolated from it (plan()). Without this an IE whose
    // proposals all arrive late (reports and proposals queued behind data at a FIFO port)
    // never paces, and its unpaced intervals keep the ports' queues long: it never catches up.
    const bool newer = !last_plan_ || proposal.interval > last_plan_->interval ||
                       (proposal.interval == last_plan_->interval && !last_plan_->from_proposal);
    if (newer) {
      note_spacing(proposal);
      last_plan_ = IntervalPlan{proposal.interval,    proposal.start, proposal.duration, true,
                                proposal.best_effort, proposal.gated};
    }
    return false;
  }
  if (!proposals_.emplace(proposal.interval, proposal).second) return false;
  note_spacing(proposal);
  return true;
}

void InputEngine::note_spacing(const Proposal& proposal) {
  if (newest_taken_ && newest_taken_->interval != proposal.interval) {
    const auto apart =
        static_cast<Duration::rep>(proposal.interval) - static_cast<Duration::rep>(newest_taken_->interval);
    const Duration spacing = (proposal.start - newest_taken_->start) / apart;
    if (spacing > Duration::zero()) spacing_ = spacing;
  }
  if (!newest_taken_ || proposal.interval > newest_taken_->interval) newest_taken_ = proposal;
}

}  // namespace netio::scheduler
