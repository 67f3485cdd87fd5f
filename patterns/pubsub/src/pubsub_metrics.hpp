// SPDX-License-Identifier: MIT
// The pub/sub sockets' metrics (netio/metrics.hpp): their stats(), read at a scrape, added to
// their Context's registry for the socket's life. The socket's destructor removes them first,
// before it shuts down, holding no lock of its own.
#pragma once

#include "drops_by_tag.hpp"
#include "netio/metrics.hpp"
#include "netio/pubsub/publish_socket.hpp"
#include "netio/pubsub/subscribe_socket.hpp"

#include <functional>
#include <string>

namespace netio::pubsub::detail {

// `drops` (the socket's, which outlives the registration): netio_*_tag_dropped_total{tag}.
[[nodiscard]] MetricsRegistry::Registration add_publish_metrics(Context& context, std::string endpoint,
                                                                std::function<PublishStats()> stats,
                                                                const DropsByTag& drops);
[[nodiscard]] MetricsRegistry::Registration add_subscribe_metrics(Context& context,
                                                                  std::function<SubscribeStats()> stats,
                                                                  const DropsByTag& drops);

}  // namespace netio::pubsub::detail
