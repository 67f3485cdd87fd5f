// SPDX-License-Identifier: MIT
#include "netio/scheduler/compute_node.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"

#include <algorithm>
#include <string>

namespace netio::scheduler {
namespace {

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "compute node"};

}  // namespace

ComputeNode::ComputeNode(const SchedulerConfig& config, ComputeIndex self, std::uint32_t credits_per_input,
                         const std::vector<InputIndex>& standby_inputs)
    : input_count_(config.input_count),
      compute_count_(config.compute_count),
      self_(self),
      credits_(credits_per_input),
      by_load_(config.assignment == Assignment::load),
      inputs_(config.input_count == 0 ? 1 : config.input_count, standby_inputs),
      next_expected_(by_load_ ? 0 : self),
      held_(config.input_count, 0),
      gone_(config.input_count, false),
      reassigned_held_(config.input_count, 0) {
  validate(config);
  if (self >= config.compute_count) {
    reject("index " + std::to_string(self) + " out of range (" + std::to_string(config.compute_count) + ")");
  }
  if (credits_per_input == 0) reject("0 credits per input");
}

ComputeNode::Arrival ComputeNode::on_contribution(InputIndex i, TimesliceIndex t, Time now) {
  if (i >= input_count_) reject("input " + std::to_string(i) + " out of range");
  if (!by_load_ && t % compute_count_ != self_) return Arrival::not_mine;
  if (!inputs_.member(i, t)) return Arrival::not_mine;
  if (t < next_expected_) return Arrival::late;
  return take(open_, held_, i, t, 0, now);
}

ComputeNode::Arrival ComputeNode::on_reassigned(InputIndex i, TimesliceIndex t, std::uint8_t attempt, Time now) {
  if (i >= input_count_) reject("input " + std::to_string(i) + " out of range");
  if (attempt == 0 || !inputs_.member(i, t)) return Arrival::not_mine;
  if (built_elsewhere_.contains(t) || handed_over_reassigned_.contains(t)) return Arrival::late;
  return take(reassigned_, reassigned_held_, i, t, attempt, now);
}

ComputeNode::Arrival ComputeNode::take(std::map<TimesliceIndex, Open>& where, std::vector<std::uint32_t>& held,
                                       InputIndex i, TimesliceIndex t, std::uint8_t attempt, Time now) {
  auto [it, inserted] = where.try_emplace(t);
  Open& open = it->second;
  if (inserted) {
    open.first_arrival = now;
    open.contributed.assign(input_count_, false);
  }
  if (open.contributed[i]) return Arrival::duplicate;
  if (held[i] >= credits_) {
    if (inserted) where.erase(it);
    return Arrival::over_credit;
  }
  open.contributed[i] = true;
  open.attempt = std::max(open.attempt, attempt);
  ++open.count;
  ++held[i];
  return complete(t, open) ? Arrival::completes : Arrival::accepted;
}

std::vector<InputIndex> ComputeNode::on_built_elsewhere(TimesliceIndex t) {
  built_elsewhere_.insert(t);
  const auto it = reassigned_.find(t);
  if (it == reassigned_.end()) return {};
  auto owed = free_contributions(it->second.contributed);
  reassigned_.erase(it);
  return owed;
}

std::vector<InputIndex> ComputeNode::free_contributions(const std::vector<bool>& contributed) {
  std::vector<InputIndex> owed;
  for (InputIndex i = 0; i < input_count_; ++i) {
    if (!contributed[i]) continue;
    owed.push_back(i);
    --reassigned_held_[i];
  }
  return owed;
}

void ComputeNode::on_input_gone(InputIndex i) {
  if (i >= input_count_) reject("input " + std::to_string(i) + " out of range");
  gone_[i] = true;
}

bool ComputeNode::on_input_joins(InputIndex i, TimesliceIndex from) {
  if (inputs_.joins_from(i) == from) return false;  // heard again, from another input
  if (handed_over_any_ && from <= highest_handed_over_) {
    reject("input " + std::to_string(i) + " joins from time-slice " + std::to_string(from) + ", but time-slice " +
           std::to_string(highest_handed_over_) + " was handed over already without it");
  }
  return inputs_.join(i, from);
}

void ComputeNode::note_handed_over(TimesliceIndex t) {
  if (!handed_over_any_ || t > highest_handed_over_) highest_handed_over_ = t;
  handed_over_any_ = true;
}

void ComputeNode::accept_rerouted() {
  if (by_load_) return;
  by_load_ = true;
  // next_expected_ was the last handed over + M (or self before the first): the time-slices
  // in between may be this node's now.
  next_expected_ = next_expected_ >= compute_count_ ? next_expected_ - compute_count_ + 1 : 0;
}

bool ComputeNode::ready(TimesliceIndex t, const Open& open, Time now, Duration timeout) const {
  // Every member input contributed or never will (gone): nothing more can come.
  bool all = true;
  for (InputIndex i = 0; all && i < input_count_; ++i) all = open.contributed[i] || gone_[i] || !inputs_.member(i, t);
  return all || (timeout > Duration::zero() && now - open.first_arrival >= timeout);
}

std::optional<ComputeNode::Ready> ComputeNode::next_ready(Time now, Duration timeout) const {
  // Reassigned ones first, the lowest ready one: they are late already, and wait for nothing
  // of this node's own order.
  for (const auto& [t, open] : reassigned_) {
    if (ready(t, open, now, timeout)) return Ready{t, complete(t, open), open.contributed, open.attempt};
  }
  if (open_.empty()) return std::nullopt;
  const auto& [t, open] = *open_.begin();
  if (!ready(t, open, now, timeout)) return std::nullopt;
  return Ready{t, complete(t, open), open.contributed, 0};
}

void ComputeNode::hand_over(TimesliceIndex t) {
  note_handed_over(t);
  if (const auto it = reassigned_.find(t); it != reassigned_.end()) {
    handed_over_reassigned_.emplace(t, std::move(it->second.contributed));
    reassigned_.erase(it);
    return;
  }
  if (open_.empty() || open_.begin()->first != t) {
    reject("hand-over of time-slice " + std::to_string(t) + ", which is not the oldest open");
  }
  handed_over_.emplace(t, std::move(open_.begin()->second.contributed));
  open_.erase(open_.begin());
  const TimesliceIndex next = t + (by_load_ ? 1 : compute_count_);  // the next one that may be this node's
  if (next > next_expected_) next_expected_ = next;
}

std::vector<InputIndex> ComputeNode::release(TimesliceIndex t) {
  if (reassigned_.contains(t)) hand_over(t);
  if (const auto it = handed_over_reassigned_.find(t); it != handed_over_reassigned_.end()) {
    const bool complete = std::find(it->second.begin(), it->second.end(), false) == it->second.end();
    auto owed = free_contributions(it->second);
    handed_over_reassigned_.erase(it);
    if (!complete) built_elsewhere_.insert(t);  // given up: a contribution still on its way is late
    return owed;
  }
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
