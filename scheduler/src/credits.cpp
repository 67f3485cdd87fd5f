// SPDX-License-Identifier: MIT
#include "netio/scheduler/credits.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <string>

namespace netio::scheduler {
namespace {

// A bad argument: misuse.
constexpr netio::detail::Rejecter reject{Errc::invalid_option, ""};

// What a peer sent that it may not: a protocol fault.
constexpr netio::detail::Rejecter reject_from_peer{Errc::protocol_error, ""};

}  // namespace

std::uint32_t credits_per_input(std::uint64_t receive_buffer_bytes, std::uint32_t input_count,
                                std::uint64_t contribution_bytes) {
  if (input_count == 0) reject("credits: input_count must be at least 1, not 0");
  if (contribution_bytes == 0) reject("credits: contribution_bytes must be at least 1, not 0");
  const std::uint64_t share = receive_buffer_bytes / input_count;
  const std::uint64_t credits = share / contribution_bytes;
  if (credits == 0) {
    reject("credits: a receive buffer of " + std::to_string(receive_buffer_bytes) + " bytes shared by " +
           std::to_string(input_count) + " inputs holds no contribution of " + std::to_string(contribution_bytes) +
           " bytes");
  }
  return credits > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(credits);
}

std::uint64_t buffer_for_credits(std::uint32_t credits, std::uint32_t input_count, std::uint64_t contribution_bytes) {
  if (credits == 0) reject("credits: credits must be at least 1, not 0");
  if (input_count == 0) reject("credits: input_count must be at least 1, not 0");
  if (contribution_bytes == 0) reject("credits: contribution_bytes must be at least 1, not 0");
  const std::uint64_t per_contribution = std::uint64_t{credits} * input_count;  // < 2^64: two 32-bit factors
  if (contribution_bytes > UINT64_MAX / per_contribution) {
    reject("credits: " + std::to_string(credits) + " credits × " + std::to_string(input_count) + " inputs × " +
           std::to_string(contribution_bytes) + " bytes is beyond 64 bits");
  }
  return per_contribution * contribution_bytes;
}

std::string too_few_credits_message(std::uint64_t credits, std::string_view sized_by, std::string_view instead) {
  std::string text(sized_by);
  text += " gives " + std::to_string(credits) + (credits == 1 ? " credit" : " credits") +
          " per input–compute pair; at least " + std::to_string(min_credits_per_input) +
          " are needed, so that one contribution is in flight while the next waits for its credit (with one, every "
          "send waits a full round trip for its credit";
  text += credits == 0 ? "; with none, no contribution fits)" : ")";
  text += "; give ";
  text += instead;
  return text;
}

InputCredits::InputCredits(std::uint32_t compute_count, std::uint32_t credits_per_compute)
    : granted_(credits_per_compute), available_(compute_count, credits_per_compute) {
  if (compute_count == 0) reject("credits: compute_count must be at least 1, not 0");
  if (credits_per_compute == 0) reject("credits: credits_per_compute must be at least 1, not 0");
}

void InputCredits::check(ComputeIndex c) const {
  if (c >= available_.size()) {
    reject("credits: compute node " + std::to_string(c) + " out of range (" + std::to_string(available_.size()) +
           " compute nodes)");
  }
}

std::uint32_t InputCredits::available(ComputeIndex c) const {
  check(c);
  return available_[c];
}

bool InputCredits::try_take(ComputeIndex c) {
  check(c);
  if (available_[c] == 0) return false;
  --available_[c];
  return true;
}

void InputCredits::give_back(ComputeIndex c, std::uint32_t count) {
  check(c);
  if (count > granted_ - available_[c]) {
    reject_from_peer("credits: compute node " + std::to_string(c) + " returned " + std::to_string(count) +
                     " credits, but only " + std::to_string(granted_ - available_[c]) + " are out");
  }
  available_[c] += count;
}

TimesliceCompletion::TimesliceCompletion(const SchedulerConfig& config, ComputeIndex self)
    : input_count_((validate(config), config.input_count)), compute_count_(config.compute_count), self_(self) {
  if (self >= compute_count_) {
    reject("time-slice completion: compute node " + std::to_string(self) + " out of range (" +
           std::to_string(compute_count_) + " compute nodes)");
  }
}

bool TimesliceCompletion::on_contribution(InputIndex i, TimesliceIndex t) {
  if (i >= input_count_) {
    reject_from_peer("time-slice completion: input " + std::to_string(i) + " out of range (" +
                     std::to_string(input_count_) + " inputs)");
  }
  if (t % compute_count_ != self_) {
    reject_from_peer("time-slice completion: time-slice " + std::to_string(t) + " belongs to compute node " +
                     std::to_string(t % compute_count_) + ", not " + std::to_string(self_));
  }
  Open& open = open_[t];
  if (open.contributed.empty()) open.contributed.assign(input_count_, false);
  if (open.contributed[i]) {
    reject_from_peer("time-slice completion: input " + std::to_string(i) + " contributed twice to time-slice " +
                     std::to_string(t));
  }
  open.contributed[i] = true;
  return ++open.count == input_count_;
}

bool TimesliceCompletion::is_complete(TimesliceIndex t) const {
  const auto it = open_.find(t);
  return it != open_.end() && it->second.count == input_count_;
}

std::vector<InputIndex> TimesliceCompletion::release(TimesliceIndex t) {
  const auto it = open_.find(t);
  if (it == open_.end()) reject("time-slice completion: release of time-slice " + std::to_string(t) + ", never seen");
  std::vector<InputIndex> owed;
  owed.reserve(it->second.count);
  for (InputIndex i = 0; i < input_count_; ++i) {
    if (it->second.contributed[i]) owed.push_back(i);
  }
  open_.erase(it);
  return owed;
}

}  // namespace netio::scheduler
