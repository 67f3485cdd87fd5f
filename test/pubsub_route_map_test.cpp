// SPDX-License-Identifier: MIT
// The publisher's routes (RouteMap) as pure logic: random changes, through growth to
// thousands of tags and back, agree with a plain map at every step, snapshots never change
// under a reader, and a change copies only the shards of the tags it touches.
#include "route_map.hpp"
#include "support/sanitizers.hpp"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

using namespace netio::pubsub;
using namespace netio::pubsub::detail;

namespace {

using Model = std::map<Tag, std::set<const DataConnection*>>;

std::shared_ptr<DataConnection> connection(std::uint64_t id) {
  return std::make_shared<DataConnection>(
      SubscriberInfo{netio::Peer(), netio::Identity{fmt::format("s{}", id), {}}, {}, Mode::high_throughput},
      netio::Peer());
}

// `map` as a Model, read through find() for the model's tags and through for_each(); a route
// under the wrong tag, or an empty list, is recorded as a null connection.
Model through_find(const RouteMap& map, const Model& model) {
  Model found;
  for (const auto& [tag, connections] : model) {
    if (const RouteList* list = map.find(tag)) {
      for (const Route& r : *list) found[tag].insert(r.tag == tag ? r.connection.get() : nullptr);
    }
  }
  return found;
}

Model through_for_each(const RouteMap& map) {
  Model found;
  map.for_each([&](Tag tag, const RouteList& list) {
    if (list.empty()) found[tag].insert(nullptr);
    for (const Route& r : list) found[tag].insert(r.tag == tag ? r.connection.get() : nullptr);
  });
  return found;
}

// One check per way of reading: a run makes thousands of routes at every step.
void check_equal(const RouteMap& map, const Model& model) {
  std::size_t routes = 0;
  for (const auto& [tag, connections] : model) routes += connections.size();
  CHECK(through_find(map, model) == model);
  CHECK(through_for_each(map) == model);
  CHECK(map.tag_count() == model.size());
  CHECK(map.route_count() == routes);
  CHECK(map.empty() == model.empty());
}

void add(RouteEditor& editor, Model& model, Tag tag, const std::shared_ptr<DataConnection>& c) {
  auto& list = editor.routes_of(tag);
  for (const Route& r : list) {
    if (r.connection == c) return;
  }
  list.push_back(Route{c, Backpressure::block, std::make_shared<RouteCounters>(), tag});
  model[tag].insert(c.get());
}

void remove(RouteEditor& editor, Model& model, Tag tag, const DataConnection* c) {
  if (auto* list = editor.find(tag)) std::erase_if(*list, [&](const Route& r) { return r.connection.get() == c; });
  if (const auto it = model.find(tag); it != model.end()) {
    it->second.erase(c);
    if (it->second.empty()) model.erase(it);
  }
}

}  // namespace

TEST_CASE("pub/sub routes: random changes through growth and shrinking agree with a plain map", "[pubsub][unit]") {
  const auto seed = GENERATE(take(netio::test::sanitized ? 1 : 3, values({1u, 2u, 3u})));
  std::mt19937_64 random(seed);
  std::vector<std::shared_ptr<DataConnection>> connections;
  for (std::uint64_t id = 1; id <= 4; ++id) connections.push_back(connection(id));

  RouteMap map;
  Model model;
  std::shared_ptr<const RouteMap> kept;  // a reader's snapshot from the middle of the run
  Model kept_model;
  std::size_t most_shards = 1;
  // 60 changes that mostly add (ranges of tags and scattered 64-bit ones), then 60 that
  // mostly remove, so the shards grow to thousands of tags and shrink again.
  for (int step = 0; step < 120; ++step) {
    const bool growing = step < 60;
    RouteEditor editor(map);
    const int requests = 1 + static_cast<int>(random() % 4);
    for (int r = 0; r < requests; ++r) {
      const auto& c = connections[random() % connections.size()];
      const bool adding = (random() % 10) < (growing ? 8u : 1u);
      if (adding) {
        const Tag first = random() % 2 == 0 ? random() % 4096 : random();
        const std::size_t count = 1 + random() % 300;
        for (std::size_t i = 0; i < count; ++i) add(editor, model, first + i, c);
      } else {
        // Remove a third of this connection's tags, or every one of them.
        const bool all = random() % 4 == 0;
        std::vector<Tag> tags;
        for (const auto& [tag, cs] : model) {
          if (cs.contains(c.get()) && (all || random() % 3 == 0)) tags.push_back(tag);
        }
        for (const Tag tag : tags) remove(editor, model, tag, c.get());
      }
    }
    map = std::move(editor).finish();
    check_equal(map, model);
    most_shards = std::max(most_shards, map.shard_count());
    CHECK(map.tag_count() <= RouteMap::most_tags_per_shard * map.shard_count());
    if (step == 50) {
      kept = std::make_shared<const RouteMap>(map);
      kept_model = model;
    }
  }
  CHECK(most_shards >= 8);                 // it grew (three doublings at least)...
  CHECK(map.shard_count() < most_shards);  // ...and shrank again
  REQUIRE(kept);
  check_equal(*kept, kept_model);  // the changes since left it as it was
}

TEST_CASE("pub/sub routes: a change copies only the shards of the tags it touches", "[pubsub][unit]") {
  const auto a = connection(1);
  const auto b = connection(2);
  Model model;
  RouteMap map;
  {
    RouteEditor editor(map);
    for (Tag tag = 0; tag < 20000; ++tag) add(editor, model, tag, a);
    map = std::move(editor).finish();
  }
  REQUIRE(map.shard_count() >= 64);
  CHECK(map.tag_count() == 20000);

  SECTION("one tag: one shard copied") {
    RouteEditor editor(map);
    add(editor, model, 12345, b);
    const RouteMap next = std::move(editor).finish();
    CHECK(next.shards_shared_with(map) == map.shard_count() - 1);
    check_equal(next, model);
  }
  SECTION("250 consecutive tags: blocks of 256 share a shard, so at most 2 shards are copied") {
    RouteEditor editor(map);
    for (Tag tag = 5000; tag < 5250; ++tag) add(editor, model, tag, b);
    const RouteMap next = std::move(editor).finish();
    CHECK(next.shards_shared_with(map) >= map.shard_count() - 2);
    check_equal(next, model);
  }
  SECTION("looking up a tag without routes copies nothing") {
    RouteEditor editor(map);
    CHECK(editor.find(1'000'000) == nullptr);
    const RouteMap next = std::move(editor).finish();
    CHECK(next.shards_shared_with(map) == map.shard_count());
  }
  SECTION("removing a connection's last route removes the tag") {
    RouteEditor editor(map);
    remove(editor, model, 7, a.get());
    const RouteMap next = std::move(editor).finish();
    CHECK(next.find(7) == nullptr);
    CHECK(next.tag_count() == 19999);
    CHECK(map.find(7) != nullptr);  // the map it started from is unchanged
  }
}
