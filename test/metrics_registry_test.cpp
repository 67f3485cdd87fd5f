// SPDX-License-Identifier: MIT
// The metrics registry and its two text formats (netio/metrics.hpp), and the sockets' own
// collectors: every socket of a Context in its registry for exactly its life, also while
// another thread collects (TSan).
#include "netio/metrics.hpp"

#include "netio/context.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/metric_sample.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;
using netio::Metric;
using netio::MetricsRegistry;
using netio::MetricType;

using netio::test::sample;

TEST_CASE("metrics: the Prometheus text names each family once, escapes label values and sums duplicates",
          "[metrics]") {
  const std::vector<Metric> metrics = {
      {"netio_b_total", MetricType::counter, "B's help", {{"endpoint", "tcp://h:1"}}, 3},
      {"netio_a", MetricType::gauge, "a \\ help\nsecond line", {}, 0.5},
      {"netio_b_total", MetricType::counter, "", {{"endpoint", "tcp://h:1"}}, 4},  // the same series: summed
      {"netio_b_total", MetricType::counter, "", {{"endpoint", "a\"b\\c\nd"}}, 1},
      {"bad name-1", MetricType::gauge, "", {{"bad-label", "x"}}, std::numeric_limits<double>::infinity()},
  };
  CHECK(netio::to_prometheus_text(metrics) ==
        "# TYPE bad_name_1 gauge\n"
        "bad_name_1{bad_label=\"x\"} +Inf\n"
        "# HELP netio_a a \\\\ help\\nsecond line\n"
        "# TYPE netio_a gauge\n"
        "netio_a 0.5\n"
        "# HELP netio_b_total B's help\n"
        "# TYPE netio_b_total counter\n"
        "netio_b_total{endpoint=\"a\\\"b\\\\c\\nd\"} 1\n"
        "netio_b_total{endpoint=\"tcp://h:1\"} 7\n");
}

TEST_CASE("metrics: InfluxDB lines escape tags, leave out empty ones and skip values that are not finite",
          "[metrics]") {
  const std::vector<Metric> metrics = {
      {"netio_x_total", MetricType::counter, "", {{"socket", "ht recv"}, {"endpoint", "a,b=c"}, {"peer", ""}}, 42},
      {"netio_nan", MetricType::gauge, "", {}, std::nan("")},
      {"netio_y", MetricType::gauge, "", {{"tag", "line\nbreak"}}, 0.25},
  };
  const auto time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  CHECK(netio::to_influx_lines(metrics, time) ==
        "netio_x_total,endpoint=a\\,b\\=c,socket=ht\\ recv value=42 1700000000000000000\n"
        "netio_y,tag=line\\ break value=0.25 1700000000000000000\n");
}

TEST_CASE("metrics: a summary is one family of _sum and _count samples", "[metrics]") {
  const std::vector<Metric> metrics = {
      {"netio_late_seconds_sum", MetricType::summary, "Late", {{"input", "0"}}, 0.25},
      {"netio_late_seconds_count", MetricType::summary, "Late", {{"input", "0"}}, 10},
      {"netio_late_seconds_sum", MetricType::summary, "Late", {{"input", "1"}}, 0.5},
      {"netio_late_seconds_count", MetricType::summary, "Late", {{"input", "1"}}, 20},
  };
  CHECK(netio::to_prometheus_text(metrics) ==
        "# HELP netio_late_seconds Late\n"
        "# TYPE netio_late_seconds summary\n"
        "netio_late_seconds_count{input=\"0\"} 10\n"
        "netio_late_seconds_count{input=\"1\"} 20\n"
        "netio_late_seconds_sum{input=\"0\"} 0.25\n"
        "netio_late_seconds_sum{input=\"1\"} 0.5\n");
}

TEST_CASE("metrics: kept totals outlive their collector, folded by series, gauges go", "[metrics]") {
  MetricsRegistry registry;
  auto socket = [](double messages, double held) {
    return [messages, held](std::vector<Metric>& out) {
      out.push_back({"netio_messages_total", MetricType::counter, "", {{"endpoint", "e"}}, messages});
      out.push_back({"netio_held_bytes", MetricType::gauge, "", {{"endpoint", "e"}}, held});
    };
  };
  auto before = registry.add(socket(1, 100));
  before.reset();
  CHECK(registry.collect().empty());  // off by default: a removed socket's series go with it

  registry.keep_removed_totals();
  auto first = registry.add(socket(10, 100));
  auto second = registry.add(socket(5, 50));
  first.reset();
  auto metrics = registry.collect();
  CHECK(metrics.size() == 3);  // the second's two, the first's counter
  second.reset();
  auto third = registry.add(socket(2, 20));
  metrics = registry.collect();
  // The live socket's, and the two removed ones' totals as one series.
  CHECK(netio::to_prometheus_text(metrics) ==
        "# TYPE netio_held_bytes gauge\n"
        "netio_held_bytes{endpoint=\"e\"} 20\n"
        "# TYPE netio_messages_total counter\n"
        "netio_messages_total{endpoint=\"e\"} 17\n");
  third.reset();
  metrics = registry.collect();
  REQUIRE(metrics.size() == 1);
  CHECK(metrics[0].value == 17);
}

TEST_CASE("metrics: a collector is called until its registration goes, and never after", "[metrics]") {
  MetricsRegistry registry;
  std::atomic<int> calls{0};
  auto registration = registry.add([&](std::vector<Metric>& out) {
    ++calls;
    out.push_back({"netio_test", MetricType::gauge, "", {}, 1});
  });
  CHECK(registry.collect().size() == 1);
  const MetricsRegistry copy = registry;  // a handle on the same collectors
  CHECK(copy.collect().size() == 1);
  registration.reset();
  CHECK(registry.collect().empty());
  CHECK(calls == 2);
  CHECK(registry.collectors() == 0);
}

TEST_CASE("metrics: removing a collector waits for its call in progress", "[metrics]") {
  MetricsRegistry registry;
  std::atomic<bool> inside{false}, finished{false};
  auto registration = registry.add([&](std::vector<Metric>&) {
    inside = true;
    std::this_thread::sleep_for(100ms);
    finished = true;
  });
  std::thread collector([&] { (void)registry.collect(); });
  while (!inside) std::this_thread::yield();
  registration.reset();
  CHECK(finished);  // reset() returned only after the call
  collector.join();
}

TEST_CASE("metrics: a throwing collector's samples are left out, the others kept", "[metrics]") {
  MetricsRegistry registry;
  auto bad = registry.add([](std::vector<Metric>& out) {
    out.push_back({"netio_half", MetricType::gauge, "", {}, 1});
    throw std::runtime_error("broken collector");
  });
  auto good = registry.add([](std::vector<Metric>& out) {
    out.push_back({"netio_good", MetricType::gauge, "", {}, 2});
  });
  const auto metrics = registry.collect();
  REQUIRE(metrics.size() == 1);
  CHECK(metrics[0].name == "netio_good");
}

TEST_CASE("metrics: every socket of a context is in its registry for its life", "[metrics]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  const auto kind = [](const char* socket) { return std::pair<std::string, std::string>("socket", socket); };
  netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse(base));
  const std::string endpoint = receiver.local_endpoint().to_string();
  {
    netio::HighThroughputSendSocket sender(context, receiver.local_endpoint());
    const std::vector<std::byte> message(100);
    for (int i = 0; i < 10; ++i) sender.send(message);
    REQUIRE(sender.flush_and_wait(10s));
    std::size_t received = 0;
    while (received < 10) {
      const std::size_t n = receiver.recv_each(10 - received, 5s, [](std::span<const std::byte>) { return true; });
      REQUIRE(n > 0);
      received += n;
    }
    const auto metrics = context.metrics().collect();
    const std::pair<std::string, std::string> at("endpoint", endpoint);
    CHECK(sample(metrics, "netio_socket_messages_total", {kind("high_throughput_send"), at}) == 10);
    CHECK(sample(metrics, "netio_socket_bytes_total", {kind("high_throughput_send"), at}) == 1000);
    CHECK(sample(metrics, "netio_socket_connections_total", {kind("high_throughput_send"), at}) == 1);
    CHECK(sample(metrics, "netio_socket_flushes_total", {kind("high_throughput_send"), {"reason", "explicit"}}) >= 1);
    CHECK(sample(metrics, "netio_socket_bytes_total", {kind("high_throughput_receive"), at}) ==
          double(receiver.stats().bytes));
  }
  const auto metrics = context.metrics().collect();
  CHECK_FALSE(sample(metrics, "netio_socket_messages_total", {kind("high_throughput_send")}));
  CHECK(sample(metrics, "netio_socket_messages_total", {kind("high_throughput_receive")}) == 10);
}

TEST_CASE("metrics: sockets made and destroyed on two threads while a third collects", "[metrics]") {
  netio::Context context(netio::test::context_options());
  const bool keep = GENERATE(false, true);  // with keep_removed_totals(): each removal collects once more
  INFO("keeping removed totals: " << keep);
  if (keep) context.metrics().keep_removed_totals();
  // The messages the send sockets sent, live and kept: never fewer than a collect before saw
  // (kept, a removed socket's total is seen once, never twice or not at all).
  auto sent = [](const std::vector<Metric>& metrics) {
    double sum = 0;
    const std::pair<std::string, std::string> send("socket", "low_latency_send");
    for (const Metric& m : metrics) {
      if (m.name == "netio_socket_messages_total" &&
          std::find(m.labels.begin(), m.labels.end(), send) != m.labels.end())
        sum += m.value;
    }
    return sum;
  };
  std::atomic<bool> done{false};
  std::atomic<std::size_t> collections{0}, went_back{0};
  std::thread scraper([&] {
    double before = 0;
    while (!done) {
      const auto metrics = context.metrics().collect();
      if (!netio::to_prometheus_text(metrics).empty()) ++collections;
      const double now = sent(metrics);
      if (now < before) ++went_back;
      before = now;
    }
  });
  auto churn = [&] {
    for (int i = 0; i < 30; ++i) {
      netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
                                              [](std::span<const std::byte>, const netio::Peer&) {});
      netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
      sender.send(std::vector<std::byte>(8));
    }
  };
  std::thread other(churn);
  churn();
  other.join();
  done = true;
  scraper.join();
  CHECK(collections > 0);
  CHECK(context.metrics().collectors() == 0);
  CHECK(sent(context.metrics().collect()) == (keep ? 60 : 0));  // 60 senders of 1 message each
  if (keep) CHECK(went_back == 0);
}
