// SPDX-License-Identifier: MIT
#include "netio/scheduler/compute_node.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <string>

namespace netio::scheduler {
namespace {

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "compute node"};

}  // namespace

ComputeNode::ComputeNode(const SchedulerConfig& config, ComputeIndex self, std::uint32_t credits_per_input)
    : input_count_(config.input_count),
      compute_count_(config.compute_count),
      self_(self),
      credits_(credits_per_input),
      by_load_(config.assignment == Assignment::load),
      next_expected_(by_load_ ? 0 : self),
      held_(config.input_count, 0),
      gone_(config.input_count, false) {
  validate(config);
  if (self >= config.compute_count) {
    reject("index " + std::to_string(self) + " out of range (" + std::to_string(config.compute_count) + ")");
  }
  if (credits_per_input == 0) reject("0 credits per input");
}

ComputeNode::Arrival ComputeNode::on_contribution(InputIndex i, TimesliceIndex t, Time now) {
  if (i >= input_count_) reject("input " + std::to_string(i) + " out of range");
  if (!by_load_ && t % compute_count_ != self_) return Arrival::not_mine;
  if (t < next_expected_) return Arrival::late;
  auto [it, inserted] = open_.try_emplace(t);
  Open& open = it->second;
  if (inserted) {
    open.first_arrival = now;
    open.contributed.assign(input_count_, false);
  }
  if (open.contributed[i]) return Arrival::duplicate;
  if (held_[i] >= credits_) {
    if (inserted) open_.erase(it);
    return Arrival::over_credit;
  }
  open.contributed[i] = true;
  ++open.count;
  ++held_[i];
  return open.count == input_count_ ? Arrival::completes : Arrival::accepted;
}

void ComputeNode::on_input_gone(InputIndex i) {
  if (i >= input_count_) reject("input " + std::to_string(i) + " out of range");
  gone_[i] = true;
}

std::optional<ComputeNode::Ready> ComputeNode::next_ready(Time now, Duration timeout) const {
  if (open_.empty()) return std::nullopt;
  const auto& [t, open] = *open_.begin();
  // Every input contributed or never will (gone): nothing more can come.
  bool ready = true;
  for (InputIndex i = 0; ready && i < input_count_; ++i) ready = open.contributed[i] || gone_[i];
  if (!ready && timeout > Duration::zero() && now - open.first_arrival >= timeout) ready = true;
  if (!ready) return std::nullopt;
  return Ready{t, open.count == input_count_, open.contributed};
}

void ComputeNode::hand_over(TimesliceIndex t) {
  if (open_.empty() || open_.begin()->first != t) {
    reject("hand-over of time-slice " + std::to_string(t) + ", which is not the oldest open");
  }
  handed_over_.emplace(t, std::move(open_.begin()->second.contributed));
  open_.erase(open_.begin());
  const TimesliceIndex next = t + (by_load_ ? 1 : compute_count_);  // the next one that may be this node's
  if (next > next_expected_) next_expected_ = next;
}

std::vector<InputIndex> ComputeNode::release(TimesliceIndex t) {
  if (const auto open = open_.find(t); open != open_.end()) hand_over(t);
  const auto it = handed_over_.find(t);
  if (it == handed_over_.end()) {
    reject("release of time-slice " + std::to_string(t) + ", which is neither open nor handed over");
  }
  std::vector<InputIndex> owed;
  for (InputIndex i = 0; i < input_count_; ++i) {
    if (it->second[i]) {
      owed.push_back(i);
      --held_[i];
    }
  }
  handed_over_.erase(it);
  return owed;
}

}  // namespace netio::scheduler
