// SPDX-License-Identifier: MIT
#include "common/metrics_option.hpp"

#include "common/cli_options.hpp"

#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/metrics.hpp"
#ifdef NETIO_WITH_METRICS
#include "netio/metrics/influx_pusher.hpp"
#include "netio/metrics/metrics_server.hpp"
#endif

#include <fmt/format.h>

#include <mutex>
#include <vector>

namespace netio::tools {

struct MetricsSession::State {
  MetricsRegistry registry;  // the tool's: the contexts' registries, each under a collector
  std::mutex mutex;
  std::vector<MetricsRegistry::Registration> watched;
#ifdef NETIO_WITH_METRICS
  std::unique_ptr<MetricsServer> server;
  std::unique_ptr<InfluxPusher> pusher;
#endif
};

namespace {
std::mutex session_mutex;
std::weak_ptr<MetricsSession::State> session;  // the one of this process, if any
}  // namespace

void add_metrics_options(CLI::App& app, MetricsOptions& target) {
  app.add_option("--metrics", target.metrics,
                 "Serve this process's metrics for Prometheus at http://ADDR:PORT/metrics (e.g. 127.0.0.1:9464; "
                 "port 0: any, printed on stderr; docs/guide/metrics.md)");
  app.add_option("--influx", target.influx,
                 "Push the metrics as InfluxDB line protocol to udp://HOST:PORT or http://HOST:PORT[/PATH?QUERY] "
                 "every --influx-interval");
  add_duration_option(app, "--influx-interval", target.influx_interval, "How often --influx pushes");
}

MetricsSession::MetricsSession(const MetricsOptions& options) {
  if (options.metrics.empty() && options.influx.empty()) return;
#ifndef NETIO_WITH_METRICS
  throw Error(Errc::invalid_option,
              "--metrics/--influx: this build has no netio::metrics (configured without libmicrohttpd)");
#else
  auto state = std::make_shared<State>();
  if (!options.metrics.empty()) {
    state->server = std::make_unique<MetricsServer>(state->registry, MetricsServerOptions{.address = options.metrics});
    fmt::print(stderr, "metrics: {}\n", state->server->url());
    std::fflush(stderr);
  }
  if (!options.influx.empty()) {
    const auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(options.influx_interval);
    state->pusher = std::make_unique<InfluxPusher>(state->registry, InfluxPushOptions{options.influx, interval});
  }
  std::lock_guard lock(session_mutex);
  session = state;
  state_ = std::move(state);
#endif
}

MetricsSession::~MetricsSession() {
  if (!state_) return;
  std::lock_guard lock(session_mutex);
  session.reset();
}

void watch_metrics(Context& context, const std::string& node) {
  std::shared_ptr<MetricsSession::State> state;
  {
    std::lock_guard lock(session_mutex);
    state = session.lock();
  }
  if (!state) return;
  // The sockets end before the session's last push: their totals stay for it.
  context.metrics().keep_removed_totals();
  auto registration = state->registry.add([source = context.metrics(), node](std::vector<Metric>& out) {
    const std::size_t first = out.size();
    auto metrics = source.collect();
    out.insert(out.end(), std::make_move_iterator(metrics.begin()), std::make_move_iterator(metrics.end()));
    if (!node.empty())
      for (std::size_t i = first; i < out.size(); ++i) out[i].labels.emplace_back("node", node);
  });
  std::lock_guard lock(state->mutex);
  state->watched.push_back(std::move(registration));
}

}  // namespace netio::tools
