// SPDX-License-Identifier: MIT
#include "subscription_table.hpp"

#include <algorithm>
#include <iterator>
#include <vector>

namespace netio::pubsub::detail {

std::shared_ptr<const RouteMap> SubscriptionTable::routes() const {
  std::lock_guard lock(routes_mutex_);
  return routes_;
}

SubscriptionTable::VersionedRoutes SubscriptionTable::versioned_routes() const {
  std::lock_guard lock(routes_mutex_);
  return {routes_, version_.load(std::memory_order_relaxed)};
}

void SubscriptionTable::publish_routes(RouteMap routes) {
  const std::size_t count = routes.route_count();
  auto fresh = std::make_shared<const RouteMap>(std::move(routes));
  {
    std::lock_guard lock(routes_mutex_);
    routes_.swap(fresh);
    version_.fetch_add(1, std::memory_order_release);
  }
  subscriptions_.store(count, std::memory_order_release);
  // `fresh` now holds the old map: released here, outside the lock.
}

std::shared_ptr<const SubscriptionTable::ConnectionList> SubscriptionTable::connections_now() const {
  std::lock_guard lock(routes_mutex_);
  return connections_now_;
}

void SubscriptionTable::connections_changed() {
  std::shared_ptr<const ConnectionList> now = std::make_shared<const ConnectionList>(connections());
  {
    std::lock_guard lock(routes_mutex_);
    connections_now_.swap(now);
  }
  connection_count_.store(connections_.size(), std::memory_order_release);
  std::size_t owners = 0;  // connections_ is ordered by owner first
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (it == connections_.begin() || std::prev(it)->first.first != it->first.first) ++owners;
  }
  subscriber_count_.store(owners, std::memory_order_release);
}

std::shared_ptr<DataConnection> SubscriptionTable::find(ConnectionId owner, Mode mode) const {
  const auto it = connections_.find({owner, mode});
  return it == connections_.end() ? nullptr : it->second;
}

void SubscriptionTable::add_connection(std::shared_ptr<DataConnection> connection) {
  const auto key = std::make_pair(connection->owner(), connection->subscriber().mode);
  connections_[key] = std::move(connection);
  connections_changed();
}

std::size_t SubscriptionTable::subscribe(const std::shared_ptr<DataConnection>& connection, std::span<const Tag> tags,
                                         Backpressure backpressure) {
  RouteEditor routes(*this->routes());
  std::size_t added = 0;
  for (const Tag tag : tags) {
    auto& list = routes.routes_of(tag);
    const auto it = std::find_if(list.begin(), list.end(), [&](const Route& r) { return r.connection == connection; });
    if (it != list.end()) {
      it->backpressure = backpressure;
    } else {
      list.push_back(Route{connection, backpressure, std::make_shared<RouteCounters>(), tag});
      connection->tags().insert(tag);
      ++added;
    }
  }
  publish_routes(std::move(routes).finish());
  return added;
}

namespace {

// Removes the route of `connection` from the routes of `tag` (a list left empty goes when
// the change is finished).
void erase_route(RouteEditor& routes, Tag tag, const DataConnection* connection) {
  if (auto* list = routes.find(tag)) {
    std::erase_if(*list, [&](const Route& r) { return r.connection.get() == connection; });
  }
}

}  // namespace

std::shared_ptr<DataConnection> SubscriptionTable::unsubscribe(ConnectionId owner, Mode mode,
                                                               std::span<const Tag> tags) {
  auto connection = find(owner, mode);
  if (!connection) return nullptr;
  RouteEditor routes(*this->routes());
  bool changed = false;
  for (const Tag tag : tags) {
    if (connection->tags().erase(tag) == 0) continue;
    erase_route(routes, tag, connection.get());
    changed = true;
  }
  if (!changed) return nullptr;
  publish_routes(std::move(routes).finish());
  if (!connection->tags().empty()) return nullptr;
  connections_.erase({owner, mode});
  connections_changed();
  return connection;
}

void SubscriptionTable::remove_connection(const std::shared_ptr<DataConnection>& connection) {
  const auto it = connections_.find({connection->owner(), connection->subscriber().mode});
  if (it == connections_.end() || it->second != connection) return;
  // Routes first: publishers stop routing to it, and the subscription count drops before
  // the connection count (PublishSocket::stats() reads them the other way round).
  RouteEditor routes(*this->routes());
  for (const Tag tag : connection->tags()) erase_route(routes, tag, connection.get());
  publish_routes(std::move(routes).finish());
  connection->tags().clear();
  connections_.erase(it);
  connections_changed();
}

std::vector<std::shared_ptr<DataConnection>> SubscriptionTable::remove_owner(ConnectionId owner) {
  std::vector<std::shared_ptr<DataConnection>> removed;
  for (const Mode mode : {Mode::low_latency, Mode::high_throughput}) {
    if (auto connection = find(owner, mode)) {
      remove_connection(connection);
      removed.push_back(std::move(connection));
    }
  }
  return removed;
}

std::vector<std::shared_ptr<DataConnection>> SubscriptionTable::connections() const {
  std::vector<std::shared_ptr<DataConnection>> all;
  all.reserve(connections_.size());
  for (const auto& [key, connection] : connections_) all.push_back(connection);
  return all;
}

}  // namespace netio::pubsub::detail
