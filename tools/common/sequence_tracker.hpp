// SPDX-License-Identifier: MIT
// Counts unique, duplicated and missing sequence numbers of one run, in constant memory
// for an in-order stream: it keeps the next expected number and the list of gaps.
//
// netio delivers a connection's messages in order, so a gap is a loss; a number from an
// open gap arriving late (a reordering, which would itself be a bug) fills it and is not a
// duplicate. At most max_gaps gaps are remembered; beyond that the oldest are forgotten
// (their late arrivals then count as duplicates), so a pathological stream cannot eat
// memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace netio::tools {

class SequenceTracker {
 public:
  static constexpr std::size_t max_gaps = 1 << 16;

  void record(std::uint64_t sequence);

  std::uint64_t unique() const noexcept { return unique_; }
  std::uint64_t duplicated() const noexcept { return duplicated_; }
  std::uint64_t reordered() const noexcept { return reordered_; }
  // Numbers in [0, max(sent, highest seen + 1)) never received. `sent` comes from the
  // sender's RUN_END when it arrived; without it, losses after the last message received
  // cannot be known.
  std::uint64_t lost(std::optional<std::uint64_t> sent) const noexcept;

 private:
  struct Gap {
    std::uint64_t begin, end;  // [begin, end) not received yet
  };
  void fill_gap(std::uint64_t sequence);

  std::uint64_t next_ = 0;  // one past the highest number seen
  std::uint64_t unique_ = 0;
  std::uint64_t duplicated_ = 0;
  std::uint64_t reordered_ = 0;
  std::vector<Gap> gaps_;  // sorted, disjoint, all below next_
};

}  // namespace netio::tools
