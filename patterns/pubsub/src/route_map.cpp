// SPDX-License-Identifier: MIT
#include "route_map.hpp"

#include <bit>
#include <utility>

namespace netio::pubsub::detail {

namespace {

// log2 of the number of shards that holds `tags` at about the target each.
unsigned bits_for(std::size_t tags) {
  const std::size_t shards = (tags + RouteMap::target_tags_per_shard - 1) / RouteMap::target_tags_per_shard;
  return shards <= 1 ? 0 : static_cast<unsigned>(std::bit_width(shards - 1));
}

}  // namespace

RouteMap::RouteMap() : shards_{std::make_shared<const Shard>()} {}

std::size_t RouteMap::shards_shared_with(const RouteMap& other) const noexcept {
  if (other.shards_.size() != shards_.size()) return 0;
  std::size_t shared = 0;
  for (std::size_t i = 0; i < shards_.size(); ++i) shared += shards_[i] == other.shards_[i] ? 1 : 0;
  return shared;
}

RouteEditor::RouteEditor(const RouteMap& base) : map_(base) {}

RouteMap::Shard& RouteEditor::own(std::size_t index) {
  if (const auto it = owned_.find(index); it != owned_.end()) return *it->second;
  const auto& before = *map_.shards_[index];
  // Its counts leave the totals now and come back, as they are then, in finish().
  map_.tags_ -= before.size();
  for (const auto& [tag, list] : before) map_.routes_ -= list.size();
  auto copy = std::make_shared<RouteMap::Shard>(before);
  RouteMap::Shard& shard = *copy;
  owned_.emplace(index, &shard);
  map_.shards_[index] = std::move(copy);
  return shard;
}

RouteList& RouteEditor::routes_of(Tag tag) { return own(map_.shard_of(tag))[tag]; }

RouteList* RouteEditor::find(Tag tag) {
  const auto index = map_.shard_of(tag);
  if (!owned_.contains(index) && !map_.shards_[index]->contains(tag)) return nullptr;
  auto& shard = own(index);
  const auto it = shard.find(tag);
  return it == shard.end() ? nullptr : &it->second;
}

RouteMap RouteEditor::finish() && {
  for (auto& [index, shard] : owned_) {
    std::erase_if(*shard, [](const auto& entry) { return entry.second.empty(); });
    map_.tags_ += shard->size();
    for (const auto& [tag, list] : *shard) map_.routes_ += list.size();
  }
  owned_.clear();
  const std::size_t shards = map_.shards_.size();
  const bool crowded = map_.tags_ > RouteMap::most_tags_per_shard * shards;
  const bool sparse = shards > 1 && map_.tags_ < RouteMap::fewest_tags_per_shard * shards;
  if (!crowded && !sparse) return std::move(map_);

  RouteMap resized;
  resized.bits_ = bits_for(map_.tags_);
  std::vector<RouteMap::Shard> fresh(std::size_t{1} << resized.bits_);
  map_.for_each([&](Tag tag, const RouteList& list) { fresh[resized.shard_of(tag)].emplace(tag, list); });
  resized.shards_.clear();
  resized.shards_.reserve(fresh.size());
  for (auto& shard : fresh) resized.shards_.push_back(std::make_shared<const RouteMap::Shard>(std::move(shard)));
  resized.tags_ = map_.tags_;
  resized.routes_ = map_.routes_;
  return resized;
}

}  // namespace netio::pubsub::detail
