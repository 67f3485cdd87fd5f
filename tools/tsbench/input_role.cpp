// SPDX-License-Identifier: MIT
#include "tsbench/input_role.hpp"

#include "tsbench/contribution_stamp.hpp"

#include "common/cpu_affinity.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

namespace netio::tools::tsbench {

InputRole::InputRole(Context& context, InputRoleOptions options) : context_(context), options_(std::move(options)) {
  scheduled_push::TimesliceSenderOptions so;
  so.config = options_.bench.scheduler_config();
  so.mode = options_.mode;
  so.input = options_.input;
  so.compute_endpoints = options_.computes;
  so.dde_endpoints = options_.ddes;
  if (const auto standby = options_.bench.standby_slot()) so.standby_computes = {*standby};
  so.standby = options_.bench.standby_input() == options_.input;
  so.max_contribution_bytes = options_.bench.contribution_bytes;
  so.on_interval = [this](const scheduled_push::IntervalOutcome& outcome) {
    IntervalRecord r;
    r.input = outcome.report.input;
    r.interval = outcome.report.interval;
    r.actual_start = outcome.report.start - options_.origin;
    r.actual_duration = outcome.report.duration;
    if (outcome.plan) {
      r.proposed_start = outcome.plan->start - options_.origin;
      r.proposed_duration = outcome.plan->duration;
    }
    intervals_.push_back(r);
  };
  sender_ = std::make_unique<scheduled_push::TimesliceSender>(context_, so);
}

InputRole::~InputRole() {
  stopping_ = true;
  set_limit(0);
  if (generator_.joinable()) generator_.join();
}

void InputRole::start() {
  generator_ = std::thread([this] { generate(); });
}

void InputRole::join() {
  sender_->join();
  join_asked_ = true;
}

void InputRole::generate() {
  std::vector<std::byte> contribution(options_.bench.contribution_bytes, std::byte{0x5a});
  try {
    if (options_.bench.generator_cpu) pin_current_thread(*options_.bench.generator_cpu);
    ns::TimesliceIndex first = 0;
    if (options_.bench.standby_input() == options_.input) {
      std::optional<ns::TimesliceIndex> from;  // its boundary, once join() was asked and a member named it
      while (!from && !(stopping_ && !join_asked_) && limit_.load(std::memory_order_acquire) != 0)
        from = sender_->wait_joined(std::chrono::milliseconds(20));
      if (!from) return;
      first = *from;
    }
    for (ns::TimesliceIndex t = first; t < limit_.load(std::memory_order_acquire); ++t) {
      stamp(contribution, t, options_.input);
      sender_->push(t, contribution);
      pushed_.store(t + 1, std::memory_order_release);
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(error_mutex_);
    error_ = fmt::format("input {}: {}", options_.input, e.what());
  }
}

void InputRole::end_stream() {
  stopping_ = true;
  if (generator_.joinable()) generator_.join();
  sender_->finish();
}

std::string InputRole::finish(std::chrono::nanoseconds timeout) {
  end_stream();
  {
    std::lock_guard lock(error_mutex_);
    if (!error_.empty()) return error_;
  }
  if (!sender_->wait_finished(timeout)) {
    const auto s = sender_->stats();
    return fmt::format("input {}: not everything sent and credited within {} s ({} of {} sent, {} credits back)",
                       options_.input, std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), s.sent,
                       s.pushed, s.credits_returned);
  }
  if (const auto s = sender_->stats(); s.undeliverable + s.unbuilt > 0) {
    return fmt::format("input {}: {} contributions no compute node could build ({} compute nodes lost)", options_.input,
                       s.undeliverable + s.unbuilt, s.computes_lost);
  }
  return {};
}

std::vector<IntervalRecord> InputRole::take_records() {
  stopping_ = true;
  set_limit(0);
  if (generator_.joinable()) generator_.join();
  sender_.reset();  // no callback runs after this
  return std::move(intervals_);
}

}  // namespace netio::tools::tsbench
