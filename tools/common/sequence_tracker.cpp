// SPDX-License-Identifier: MIT
#include "sequence_tracker.hpp"

#include <algorithm>

namespace netio::tools {

void SequenceTracker::record(std::uint64_t sequence) {
  if (sequence == next_) {  // the common case: in order
    ++next_;
    ++unique_;
    return;
  }
  if (sequence > next_) {
    if (gaps_.size() == max_gaps) gaps_.erase(gaps_.begin());
    gaps_.push_back({next_, sequence});
    next_ = sequence + 1;
    ++unique_;
    return;
  }
  fill_gap(sequence);
}

void SequenceTracker::fill_gap(std::uint64_t sequence) {
  // The first gap ending after `sequence`; it holds `sequence` if it begins at or before it.
  auto it = std::upper_bound(gaps_.begin(), gaps_.end(), sequence,
                             [](std::uint64_t s, const Gap& gap) { return s < gap.end; });
  if (it == gaps_.end() || sequence < it->begin) {
    ++duplicated_;
    return;
  }
  ++unique_;
  ++reordered_;
  if (it->begin == sequence) {
    ++it->begin;
  } else if (it->end == sequence + 1) {
    --it->end;
  } else {
    const Gap tail{sequence + 1, it->end};
    it->end = sequence;
    it = gaps_.insert(it + 1, tail) - 1;
  }
  if (it->begin == it->end) gaps_.erase(it);
}

std::uint64_t SequenceTracker::lost(std::optional<std::uint64_t> sent) const noexcept {
  const std::uint64_t expected = std::max(sent.value_or(0), next_);
  return expected > unique_ ? expected - unique_ : 0;
}

}  // namespace netio::tools
