// SPDX-License-Identifier: MIT
#include "socket_metrics.hpp"

#include "netio/context.hpp"

namespace netio::detail {

MetricsRegistry::Registration add_socket_metrics(Context& context, std::string_view socket, std::string endpoint,
                                                 const StatsCounters& counters, std::optional<ReceiveGauges> receive) {
  return context.metrics().add([socket = std::string(socket), endpoint = std::move(endpoint), &counters,
                                receive = std::move(receive)](std::vector<Metric>& out) {
    const SocketStats s = counters.snapshot();
    auto counter = [&](const char* name, const char* help, std::uint64_t value, const char* reason = nullptr) {
      Metric m{name, MetricType::counter, help, {{"socket", socket}, {"endpoint", endpoint}}, double(value)};
      if (reason) m.labels.emplace_back("reason", reason);
      out.push_back(std::move(m));
    };
    counter("netio_socket_messages_total", "Messages sent or received by the socket", s.messages);
    counter("netio_socket_bytes_total", "Payload bytes sent or received by the socket, without framing", s.bytes);
    counter("netio_socket_pages_total", "Pages (high-throughput) or buffers (low-latency) moved", s.pages);
    const char* flushes = "Pages sent, by why they were sent (full, timer, explicit)";
    counter("netio_socket_flushes_total", flushes, s.flushes_full, "full");
    counter("netio_socket_flushes_total", flushes, s.flushes_timer, "timer");
    counter("netio_socket_flushes_total", flushes, s.flushes_explicit, "explicit");
    counter("netio_socket_backpressure_waits_total", "send() calls that had to wait for a free buffer",
            s.backpressure_waits);
    counter("netio_socket_connections_total", "Connections accepted or established", s.connections);
    counter("netio_socket_disconnects_total", "Connections lost or dropped for a protocol error", s.disconnects);
    counter("netio_socket_zero_copy_messages_total", "High-throughput messages sent from the caller's memory",
            s.zero_copy_messages);
    if (!receive) return;
    const ReceiveBudget& budget = *receive->budget;
    auto of_budget = [&](const char* name, MetricType type, const char* help, std::size_t value) {
      out.push_back({name,
                     type,
                     help,
                     {{"socket", socket}, {"endpoint", endpoint}, {"budget", receive->shared ? "shared" : "own"}},
                     double(value)});
    };
    of_budget("netio_socket_budget_held_bytes", MetricType::gauge,
              "Bytes held against the receive budget now (a shared budget: by all its sockets)", budget.used());
    of_budget("netio_socket_budget_peak_bytes", MetricType::gauge, "The most bytes the receive budget ever held",
              budget.peak());
    of_budget("netio_socket_budget_limit_bytes", MetricType::gauge, "The receive budget's limit", budget.limit());
    of_budget("netio_socket_budget_refusals_total", MetricType::counter,
              "Connections, messages and replies the receive budget turned away", budget.refusals());
    out.push_back({"netio_socket_replies_queued",
                   MetricType::gauge,
                   "Replies queued to peers and not yet sent (Peer::try_reply)",
                   {{"socket", socket}, {"endpoint", endpoint}},
                   double(receive->replies_queued->load(std::memory_order_relaxed))});
  });
}

}  // namespace netio::detail
