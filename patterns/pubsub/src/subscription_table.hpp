// SPDX-License-Identifier: MIT
// Who subscribed to what, on the publisher: each tag's routes (a data connection and its
// back-pressure policy), and each subscriber's data connections, one per mode.
//
// Changes are made by one thread at a time (the publisher's event-loop thread); publishing
// threads read an immutable snapshot of the routes (routes()), which a change replaces:
// reading costs a lock and a reference count, never a wait for a change in progress. A
// change copies only the shards of the routes it touches (RouteMap). A
// reader that keeps a snapshot (a PublishSocket::Publisher) compares version() with the one
// it took, an atomic load, and takes the routes again only when they changed.
#pragma once

#include "data_connection.hpp"
#include "netio/pubsub/subscription.hpp"
#include "route_map.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace netio::pubsub::detail {

class SubscriptionTable {
 public:
  // The routes now; valid (unchanging) as long as it is held. Any thread.
  std::shared_ptr<const RouteMap> routes() const;
  // The routes now and their version. Any thread.
  struct VersionedRoutes {
    std::shared_ptr<const RouteMap> routes;
    std::uint64_t version = 0;
  };
  VersionedRoutes versioned_routes() const;
  // Increases with every change of the routes (starts at 1). Any thread.
  std::uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }

  // The data connection of `owner` (a control connection) in `mode`, if it has one.
  std::shared_ptr<DataConnection> find(ConnectionId owner, Mode mode) const;
  // Registers a new data connection (no routes yet).
  void add_connection(std::shared_ptr<DataConnection> connection);
  // Adds the routes of `tags` to `connection` (registered before), or changes their
  // back-pressure where they are there already, all in one change of the routes. Returns
  // how many routes are new.
  std::size_t subscribe(const std::shared_ptr<DataConnection>& connection, std::span<const Tag> tags,
                        Backpressure backpressure);
  // Removes the routes of `tags` (unknown ones are ignored); returns the connection when
  // it has no tag left (then it is unregistered too, and the caller closes it), else nullptr.
  std::shared_ptr<DataConnection> unsubscribe(ConnectionId owner, Mode mode, std::span<const Tag> tags);
  // Removes one data connection and all its routes (a failed connection).
  void remove_connection(const std::shared_ptr<DataConnection>& connection);
  // Removes every data connection of `owner` and their routes; returns them to close.
  std::vector<std::shared_ptr<DataConnection>> remove_owner(ConnectionId owner);
  // Every data connection (for drop reports and shutdown).
  std::vector<std::shared_ptr<DataConnection>> connections() const;
  // Every data connection now, as an immutable snapshot that a change of them replaces.
  // Any thread: flush() walks the connections, not the routes (a publisher may have
  // hundreds of thousands of those).
  using ConnectionList = std::vector<std::shared_ptr<DataConnection>>;
  std::shared_ptr<const ConnectionList> connections_now() const;

  std::size_t subscription_count() const noexcept { return subscriptions_.load(std::memory_order_acquire); }
  std::size_t connection_count() const noexcept { return connection_count_.load(std::memory_order_acquire); }
  // Owners (subscribers) with at least one data connection.
  std::size_t subscriber_count() const noexcept { return subscriber_count_.load(std::memory_order_acquire); }

 private:
  void publish_routes(RouteMap routes);

  std::map<std::pair<ConnectionId, Mode>, std::shared_ptr<DataConnection>> connections_;
  mutable std::mutex routes_mutex_;  // guards routes_ and connections_now_ (the pointers, not what they point to)
  std::shared_ptr<const RouteMap> routes_ = std::make_shared<const RouteMap>();
  std::shared_ptr<const ConnectionList> connections_now_ = std::make_shared<const ConnectionList>();  // routes_mutex_
  std::atomic<std::uint64_t> version_{1};  // written under routes_mutex_ with routes_
  std::atomic<std::size_t> subscriptions_{0};
  std::atomic<std::size_t> connection_count_{0};
  std::atomic<std::size_t> subscriber_count_{0};
  void connections_changed();  // counts them and replaces connections_now_
};

}  // namespace netio::pubsub::detail
