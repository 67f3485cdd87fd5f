// SPDX-License-Identifier: MIT
/// @file
/// MetricsServer: a registry's metrics (netio/metrics.hpp) over HTTP for Prometheus to scrape,
/// in the text format 0.0.4 at `GET /metrics`, served by libmicrohttpd on a thread of its own.
///
///     netio::Context context;
///     netio::MetricsServer server(context, {.address = "127.0.0.1:9464"});
///     // every socket of `context`, while it lives: curl http://127.0.0.1:9464/metrics
///
/// Exposure: it binds the address given, loopback by default; it answers `GET /metrics` and
/// 404 to everything else; requests larger than max_request_bytes are refused (431/413 by
/// libmicrohttpd) and more than max_connections at once are closed when accepted; a client
/// silent for connection_timeout is dropped. Each scrape reads the counters when asked: the
/// data path pays nothing for it.
/// Part of the library netio::metrics (NETIO_WITH_METRICS), not of netio::netio.
/// Thread-safety: all methods from any thread. Lifetime: independent of the Context (the
/// server holds a handle on its registry); a socket's metrics leave with the socket.
#pragma once

#include "netio/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace netio {

class Context;

struct MetricsServerOptions {
  /// host:port, [ipv6]:port or name:port to bind; port 0 picks a free one (see port()).
  /// Use 0.0.0.0:PORT only where the network in front of it is trusted.
  std::string address = "127.0.0.1:9464";
  unsigned max_connections = 64;               ///< clients served at once; more are closed when accepted
  std::size_t max_request_bytes = 8192;        ///< a request's line and headers
  std::chrono::seconds connection_timeout{5};  ///< a client silent this long is dropped
};

class MetricsServer {
 public:
  /// Serves `context.metrics()`. Throws netio::Error: Errc::invalid_option for an address
  /// that does not parse, Errc::resolve_failed for a host that does not resolve,
  /// Errc::backend_error when it cannot bind (naming the address and why).
  explicit MetricsServer(Context& context, MetricsServerOptions options = {});
  explicit MetricsServer(MetricsRegistry registry, MetricsServerOptions options = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// The port bound (the one chosen when the address gave 0).
  std::uint16_t port() const noexcept;
  /// Where to scrape, e.g. "http://127.0.0.1:9464/metrics".
  std::string url() const;
  /// Scrapes answered (GET /metrics) and other requests refused with 404.
  std::uint64_t scrapes() const noexcept;
  std::uint64_t rejected() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netio
