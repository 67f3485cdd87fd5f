// SPDX-License-Identifier: MIT
// Messages dropped under Backpressure::drop, by tag, for the metrics (pubsub_metrics.hpp):
// counted where a drop happens (the publisher) or is reported (the subscriber), never on the
// delivery path. The number of series is bounded: the first max_tags_with_drop_series tags
// that drop get one each, in the order they first dropped (a tag keeps its series); the drops
// of any other tag are summed under the tag "other", which is always there (0 until then), so
// that a dashboard finds the series before the first drop.
// Thread-safety: everything, from any thread (a short lock).
#pragma once

#include "netio/pubsub/subscription.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace netio::pubsub::detail {

inline constexpr std::size_t max_tags_with_drop_series = 64;

class DropsByTag {
 public:
  void add(Tag tag, std::uint64_t dropped) {
    std::lock_guard lock(mutex_);
    const auto it = by_tag_.find(tag);
    if (it != by_tag_.end()) {
      it->second += dropped;
    } else if (by_tag_.size() < max_tags_with_drop_series) {
      by_tag_.emplace(tag, dropped);
    } else {
      other_ += dropped;
    }
  }
  // (tag label, drops) for every tag with drops, then "other".
  std::vector<std::pair<std::string, std::uint64_t>> snapshot() const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, std::uint64_t>> out;
    out.reserve(by_tag_.size() + 1);
    for (const auto& [tag, dropped] : by_tag_) out.emplace_back(std::to_string(tag), dropped);
    out.emplace_back("other", other_);
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::map<Tag, std::uint64_t> by_tag_;
  std::uint64_t other_ = 0;
};

}  // namespace netio::pubsub::detail
