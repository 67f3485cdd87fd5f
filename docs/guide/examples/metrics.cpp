// SPDX-License-Identifier: MIT
// Metrics: every socket of a context served for Prometheus, a collector of the
// application's own, and the same samples as InfluxDB line protocol.
#include <netio/context.hpp>
#include <netio/high_throughput_socket.hpp>
#include <netio/metrics.hpp>
#include <netio/metrics/metrics_server.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <vector>

int main() {
  using namespace std::chrono_literals;
  netio::Context context;
  // Loopback unless told otherwise; port 0 picks a free port (9464 is the usual one).
  netio::MetricsServer server(context, {.address = "127.0.0.1:0"});
  fmt::print("scrape {}\n", server.url());

  netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"));
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint());
  for (int i = 0; i < 1000; ++i) sender.send(std::vector<std::byte>(64));
  if (!sender.flush_and_wait(5s)) return 1;

  // The application's own counter, read when someone scrapes: keep the registration as
  // long as the counter lives.
  std::atomic<std::uint64_t> events_built{42};
  auto registration = context.metrics().add([&](std::vector<netio::Metric>& out) {
    out.push_back({"myapp_events_built_total",
                   netio::MetricType::counter,
                   "Events built",
                   {{"node", "builder0"}},
                   double(events_built.load())});
  });

  std::size_t received = 0;
  while (received < 1000) received += receiver.recv_each(1000, 1s, [](std::span<const std::byte>) { return true; });

  const std::vector<netio::Metric> metrics = context.metrics().collect();
  fmt::print("{}", netio::to_prometheus_text(metrics));  // what GET /metrics answers
  fmt::print("{}", netio::to_influx_lines(metrics, std::chrono::system_clock::now()));
  return 0;
}
