// SPDX-License-Identifier: MIT
// A socket's metrics (netio/metrics.hpp): the counters behind its stats(), added to its
// Context's registry for the socket's life. Reading them at a scrape is a relaxed load per
// counter; the data path does nothing it did not do before.
#pragma once

#include "netio/metrics.hpp"

#include "netio/receive_budget.hpp"
#include "stats_counters.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace netio {
class Context;
}

namespace netio::detail {

/// What a receive socket holds, read when collected: its memory budget (used() is what the
/// budget's sockets hold together: the socket's own unless `shared`) and the replies queued
/// to its peers (ReceiveConnections::replies_queued()).
struct ReceiveGauges {
  std::shared_ptr<const ReceiveBudget> budget;
  bool shared = false;
  std::shared_ptr<const std::atomic<std::uint64_t>> replies_queued;
};

/// Adds the counters of a socket of kind `socket` (e.g. "high_throughput_receive"), at
/// `endpoint` (its local endpoint for a receiver, the remote one for a sender; empty for a
/// multi-destination socket), to `context`'s registry; a receive socket's `receive` gauges
/// too. Keep the Registration as the socket Impl's last member, so that it goes first,
/// before `counters`.
[[nodiscard]] MetricsRegistry::Registration add_socket_metrics(Context& context, std::string_view socket,
                                                               std::string endpoint, const StatsCounters& counters,
                                                               std::optional<ReceiveGauges> receive = std::nullopt);

}  // namespace netio::detail
