#include "subscription_table.hpp"

#include <algorithm>

namespace netio::pubsub::detail {

std::shared_ptr<const RouteMap> SubscriptionTable::routes() const {
  std::lock_guard lock(routes_mutex_);
  return routes_;
}

RouteMap SubscriptionTable::copy_routes() const {
  std::lock_guard lock(routes_mutex_);
  return *routes_;
}

void SubscriptionTable::publish_routes(RouteMap routes) {
  std::size_t count = 0;
  for (const auto& [tag, list] : routes) count += list.size();
  auto fresh = std::make_shared<const RouteMap>(std::move(routes));
  {
    std::lock_guard lock(routes_mutex_);
    routes_.swap(fresh);
  }
  subscriptions_.store(count, std::memory_order_relaxed);
  // `fresh` now holds the old map: released here, outside the lock.
}

std::shared_ptr<DataConnection> SubscriptionTable::find(ConnectionId owner, Mode mode) const {
  const auto it = connections_.find({owner, mode});
  return it == connections_.end() ? nullptr : it->second;
}

void SubscriptionTable::add_connection(std::shared_ptr<DataConnection> connection) {
  const auto key = std::make_pair(connection->owner(), connection->subscriber().mode);
  connections_[key] = std::move(connection);
  connection_count_.store(connections_.size(), std::memory_order_relaxed);
}

bool SubscriptionTable::subscribe(const std::shared_ptr<DataConnection>& connection, Tag tag, Backpressure backpressure) {
  RouteMap routes = copy_routes();
  auto& list = routes[tag];
  const auto it = std::find_if(list.begin(), list.end(), [&](const Route& r) { return r.connection == connection; });
  if (it != list.end()) {
    it->backpressure = backpressure;
    publish_routes(std::move(routes));
    return false;
  }
  list.push_back(Route{connection, backpressure, std::make_shared<RouteCounters>(), tag});
  connection->tags().insert(tag);
  publish_routes(std::move(routes));
  return true;
}

namespace {

// Removes the routes of `connection` (of `tag` only, when given) from `routes`.
void erase_routes(RouteMap& routes, const DataConnection* connection, const Tag* tag) {
  for (auto it = routes.begin(); it != routes.end();) {
    if (tag == nullptr || it->first == *tag) {
      auto& list = it->second;
      list.erase(std::remove_if(list.begin(), list.end(), [&](const Route& r) { return r.connection.get() == connection; }),
                 list.end());
    }
    it = it->second.empty() ? routes.erase(it) : std::next(it);
  }
}

}  // namespace

std::shared_ptr<DataConnection> SubscriptionTable::unsubscribe(ConnectionId owner, Mode mode, Tag tag) {
  auto connection = find(owner, mode);
  if (!connection || connection->tags().erase(tag) == 0) return nullptr;
  RouteMap routes = copy_routes();
  erase_routes(routes, connection.get(), &tag);
  publish_routes(std::move(routes));
  if (!connection->tags().empty()) return nullptr;
  connections_.erase({owner, mode});
  connection_count_.store(connections_.size(), std::memory_order_relaxed);
  return connection;
}

void SubscriptionTable::remove_connection(const std::shared_ptr<DataConnection>& connection) {
  const auto it = connections_.find({connection->owner(), connection->subscriber().mode});
  if (it == connections_.end() || it->second != connection) return;
  connections_.erase(it);
  connection_count_.store(connections_.size(), std::memory_order_relaxed);
  RouteMap routes = copy_routes();
  erase_routes(routes, connection.get(), nullptr);
  publish_routes(std::move(routes));
  connection->tags().clear();
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
