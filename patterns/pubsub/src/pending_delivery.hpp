// SPDX-License-Identifier: MIT
// One subscriber a try_publish() message has not reached yet (PublishProgress).
#pragma once

#include "subscription_table.hpp"

#include <memory>

namespace netio::pubsub::detail {

struct PendingDelivery {
  std::shared_ptr<DataConnection> connection;
  Backpressure backpressure = Backpressure::block;
  std::shared_ptr<RouteCounters> counters;
};

}  // namespace netio::pubsub::detail
