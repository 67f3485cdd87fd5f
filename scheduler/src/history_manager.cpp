// SPDX-License-Identifier: MIT
#include "netio/scheduler/history_manager.hpp"

#include "netio/error.hpp"
#include "netio/scheduler/statistics.hpp"

#include <algorithm>
#include <string>

namespace netio::scheduler {

HistoryManager::HistoryManager(std::uint32_t input_count, std::uint32_t retained,
                               const std::vector<InputIndex>& standby)
    : input_count_(input_count), retained_(retained), inputs_(input_count == 0 ? 1 : input_count, standby) {
  if (input_count == 0 || retained == 0) {
    throw Error(Errc::invalid_option, "history manager: input_count (" + std::to_string(input_count) +
                                          ") and retained (" + std::to_string(retained) + ") must be ≥ 1");
  }
}

std::optional<UnifiedInterval> HistoryManager::add(InputIndex i, const MeasuredInterval& measured) {
  if (i >= input_count_) {
    throw Error(Errc::invalid_option, "history manager: input " + std::to_string(i) + " out of range (" +
                                          std::to_string(input_count_) + " inputs)");
  }
  const IntervalIndex j = measured.interval;
  if (!inputs_.member(i, j)) {
    const auto from = inputs_.joins_from(i);
    throw Error(Errc::invalid_option, "history manager: input " + std::to_string(i) + " reports interval " +
                                          std::to_string(j) + ", but it is on standby" +
                                          (from ? " until interval " + std::to_string(*from) : std::string()));
  }
  if (complete_.contains(j)) return std::nullopt;
  if (newest_report_ && j + retained_ < *newest_report_) return std::nullopt;  // forgotten already
  auto& reports = pending_[j];
  if (!reports.emplace(i, measured).second) return std::nullopt;  // the first report of an IE counts
  if (!newest_report_ || j > *newest_report_) newest_report_ = j;

  std::optional<UnifiedInterval> completed;
  if (reports.size() == inputs_.members(j)) {
    // The maps are ordered by input, so the arithmetic below sees the same sequence whatever
    // the arrival order was.
    std::vector<Time> starts;
    std::vector<Duration> durations;
    std::vector<Duration> proposed;
    std::vector<Duration> latencies;
    std::optional<Time> first_probe, last_probe;
    bool every_probe = true;
    for (const auto& [input, m] : reports) {
      if (m.probe_acknowledged) {
        first_probe = first_probe ? std::min(*first_probe, *m.probe_acknowledged) : *m.probe_acknowledged;
        last_probe = last_probe ? std::max(*last_probe, *m.probe_acknowledged) : *m.probe_acknowledged;
      } else {
        every_probe = false;
      }
      starts.push_back(m.start);
      durations.push_back(m.duration);
      if (m.proposed_duration) proposed.push_back(*m.proposed_duration);
      latencies.push_back(m.ack_latency);
    }
    UnifiedInterval unified{j, average(starts), median(durations), std::nullopt, median(std::move(latencies))};
    if (!proposed.empty()) unified.proposed_duration = median(proposed);
    if (every_probe && first_probe) unified.probe_spread = *last_probe - *first_probe;
    pending_.erase(j);
    complete_.emplace(j, unified);
    completed = unified;
  }
  forget_old(*newest_report_);
  return completed;
}

void HistoryManager::forget_old(IntervalIndex newest_report) {
  while (complete_.size() > retained_) complete_.erase(complete_.begin());
  while (!pending_.empty() && pending_.begin()->first + retained_ < newest_report) pending_.erase(pending_.begin());
}

bool HistoryManager::join(InputIndex i, IntervalIndex from) {
  if (inputs_.joins_from(i) == from) return false;  // heard again, from another input
  if (const auto last = last_complete(); last && *last >= from) {
    throw Error(Errc::invalid_option, "history manager: input " + std::to_string(i) + " joins from interval " +
                                          std::to_string(from) + ", but interval " + std::to_string(*last) +
                                          " is complete already without it");
  }
  return inputs_.join(i, from);
}

std::optional<IntervalIndex> HistoryManager::last_complete() const {
  if (complete_.empty()) return std::nullopt;
  return complete_.rbegin()->first;
}

const UnifiedInterval* HistoryManager::find(IntervalIndex interval) const {
  const auto it = complete_.find(interval);
  return it == complete_.end() ? nullptr : &it->second;
}

std::vector<UnifiedInterval> HistoryManager::window(IntervalIndex w, std::size_t count) const {
  if (count == 0 || w + 1 < count) return {};
  std::vector<UnifiedInterval> intervals;
  intervals.reserve(count);
  for (IntervalIndex j = w + 1 - count; j <= w; ++j) {
    const UnifiedInterval* unified = find(j);
    if (unified == nullptr) return {};
    intervals.push_back(*unified);
  }
  return intervals;
}

}  // namespace netio::scheduler
