// SPDX-License-Identifier: MIT
// The routes of every tag on a publisher, as publishing threads read them: an immutable
// value, shared by snapshot (SubscriptionTable::routes()).
//
// Tags are spread over shards (a power of two of them, about 256 tags each), and a change
// (RouteEditor, made by the publisher's event-loop thread) copies the shard pointers and
// only the shards it touches: a subscription request costs time in proportion to the
// shards of its tags plus the number of shards, not to every route on the publisher. Runs
// of 256 consecutive tags (a block) share a shard, so a request for a range of tags touches
// one or two, and a publisher walking through a range of tags stays within one shard for
// a while (docs/design/defaults.md has what that is worth). Up to 512 tags there is one shard.
#pragma once

#include "data_connection.hpp"
#include "netio/pubsub/subscription.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace netio::pubsub::detail {

// Drops of one route, for the counters on both sides.
struct RouteCounters {
  std::atomic<std::uint64_t> dropped{0};     // in all
  std::atomic<std::uint64_t> unreported{0};  // not yet reported to the subscriber
};

struct Route {
  std::shared_ptr<DataConnection> connection;
  Backpressure backpressure = Backpressure::block;  // never publisher_default here
  std::shared_ptr<RouteCounters> counters;
  Tag tag = 0;
};

using RouteList = std::vector<Route>;

class RouteMap {
 public:
  RouteMap();

  // The routes of `tag`, or nullptr when it has none. Valid as long as this map is.
  const RouteList* find(Tag tag) const noexcept {
    const auto& shard = *shards_[shard_of(tag)];
    const auto it = shard.find(tag);
    return it == shard.end() ? nullptr : &it->second;
  }
  // Calls f(tag, routes) for every tag with routes, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& shard : shards_) {
      for (const auto& [tag, list] : *shard) f(tag, list);
    }
  }
  std::size_t tag_count() const noexcept { return tags_; }      // tags with at least one route
  std::size_t route_count() const noexcept { return routes_; }  // routes of all tags
  bool empty() const noexcept { return tags_ == 0; }

  static constexpr unsigned block_bits = 8;                  // tags t and u share a block if t >> 8 == u >> 8
  static constexpr std::size_t target_tags_per_shard = 256;  // after a resize
  static constexpr std::size_t most_tags_per_shard = 512;    // more on average: twice the shards
  static constexpr std::size_t fewest_tags_per_shard = 64;   // fewer: as few as fit the target

  // For tests: how many shards there are, and how many of them `other` shares with this map
  // (a change leaves the shards it did not touch shared).
  std::size_t shard_count() const noexcept { return shards_.size(); }
  std::size_t shards_shared_with(const RouteMap& other) const noexcept;

 private:
  friend class RouteEditor;
  using Shard = std::unordered_map<Tag, RouteList>;

  std::size_t shard_of(Tag tag) const noexcept {
    // Fibonacci hashing of the tag's block: the top bits of the product.
    return bits_ == 0 ? 0 : static_cast<std::size_t>(((tag >> block_bits) * 0x9E3779B97F4A7C15ull) >> (64 - bits_));
  }

  std::vector<std::shared_ptr<const Shard>> shards_;  // 2^bits_ of them, never null
  unsigned bits_ = 0;
  std::size_t tags_ = 0;
  std::size_t routes_ = 0;
};

// One change of a RouteMap: starts from a map, hands out the route lists of tags to change,
// and makes the new map. Copies a shard the first time one of its tags is asked for.
// Not thread-safe; `base` is not changed.
class RouteEditor {
 public:
  explicit RouteEditor(const RouteMap& base);

  // The routes of `tag` to change, made (empty) when it has none. A list left empty is
  // removed by finish(). Valid until the next call.
  RouteList& routes_of(Tag tag);
  // The routes of `tag` to change, or nullptr when it has none (nothing is copied then).
  RouteList* find(Tag tag);

  // The new map. Grows or shrinks the number of shards when the tags per shard left their
  // range (a copy of every route then, rare: the count doubles or halves each time).
  RouteMap finish() &&;

 private:
  RouteMap::Shard& own(std::size_t index);

  RouteMap map_;
  std::unordered_map<std::size_t, RouteMap::Shard*> owned_;  // shards copied by this change
};

}  // namespace netio::pubsub::detail
