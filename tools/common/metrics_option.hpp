// SPDX-License-Identifier: MIT
// --metrics ADDR:PORT and --influx URL, for every tool: the tool's sockets as metrics
// (netio/metrics.hpp), served for Prometheus at http://ADDR:PORT/metrics and/or pushed as
// InfluxDB line protocol every --influx-interval. Use:
//   add_metrics_options(app, o.metrics);                 // declaring the options
//   MetricsSession metrics(o.metrics);                   // in run, before the contexts
//   watch_metrics(context);                              // each context, once made
// The server's URL goes to stderr ("metrics: http://127.0.0.1:9464/metrics"), where a test
// or a script finds the port chosen for port 0. In a build without netio::metrics
// (NETIO_WITH_METRICS off) the options are refused when given.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace netio {
class Context;
}

namespace netio::tools {

struct MetricsOptions {
  std::string metrics;  ///< ADDR:PORT to serve; empty: no server
  std::string influx;   ///< udp://HOST:PORT or http://HOST:PORT[/PATH?QUERY]; empty: no push
  std::chrono::nanoseconds influx_interval = std::chrono::seconds(1);
};

void add_metrics_options(CLI::App& app, MetricsOptions& target);

/// What the options ask for, for its lifetime (the last influx push when it ends). One at a
/// time per process. Throws netio::Error when the server cannot listen or the URL is bad.
class MetricsSession {
 public:
  explicit MetricsSession(const MetricsOptions& options);
  ~MetricsSession();
  MetricsSession(const MetricsSession&) = delete;
  MetricsSession& operator=(const MetricsSession&) = delete;
  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// Adds `context`'s metrics, labelled node=`node` when not empty (netio_tsbench: a context
/// per node), to the session's for the rest of the session; nothing without a session. The
/// counters of the context's sockets stay after the sockets end
/// (MetricsRegistry::keep_removed_totals()), so that the last InfluxDB push, when the session
/// ends, carries the run's final totals.
void watch_metrics(Context& context, const std::string& node = "");

}  // namespace netio::tools
