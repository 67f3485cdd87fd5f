// SPDX-License-Identifier: MIT
// The scheduled push's metrics (netio/metrics.hpp): the stats() of the time-slice senders
// (input nodes), receivers (compute nodes) and DDE replicas, read at a scrape, added to their
// Context's registry for the object's life. Each destructor removes them first, holding no
// lock of its own, so a scrape waiting for a stats lock never waits for the destructor.
#pragma once

#include "netio/metrics.hpp"
#include "netio/scheduled_push/dde_service.hpp"
#include "netio/scheduled_push/timeslice_receiver.hpp"
#include "netio/scheduled_push/timeslice_sender.hpp"

#include <functional>
#include <string>

namespace netio::scheduled_push::detail {

[[nodiscard]] MetricsRegistry::Registration add_sender_metrics(Context& context, std::uint32_t input,
                                                               std::function<TimesliceSenderStats()> stats);
[[nodiscard]] MetricsRegistry::Registration add_receiver_metrics(Context& context, std::string endpoint,
                                                                 std::function<TimesliceReceiverStats()> stats);
[[nodiscard]] MetricsRegistry::Registration add_dde_metrics(Context& context, std::string endpoint,
                                                            std::function<DdeServiceStats()> stats);

}  // namespace netio::scheduled_push::detail
