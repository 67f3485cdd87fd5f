// SPDX-License-Identifier: MIT
/// @file
/// InfluxPusher: a registry's metrics (netio/metrics.hpp) pushed as InfluxDB line protocol at
/// an interval, as FLESnet does, from a thread of its own: over UDP (InfluxDB's UDP listener,
/// Telegraf's socket_listener) or over HTTP (InfluxDB 1.x `/write`, or 2.x's with the path
/// and query given in the URL).
///
///     netio::InfluxPusher pusher(context, {.url = "udp://127.0.0.1:8089"});
///
/// A UDP datagram carries whole lines and at most 1400 bytes. A push that fails (nobody
/// listening, an HTTP status other than 2xx) is logged once and the pushes go on.
/// Part of the library netio::metrics (NETIO_WITH_METRICS).
/// Thread-safety: all methods from any thread. The destructor pushes once more, so that a
/// short run leaves its final counts.
#pragma once

#include "netio/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace netio {

class Context;

struct InfluxPushOptions {
  /// udp://host:port, or http://host:port/path?query (default path /write)
  std::string url;
  std::chrono::milliseconds interval{1000};
};

class InfluxPusher {
 public:
  /// Throws netio::Error: Errc::invalid_option for a URL of another scheme or without a port,
  /// Errc::resolve_failed for a host that does not resolve.
  InfluxPusher(Context& context, InfluxPushOptions options);
  InfluxPusher(MetricsRegistry registry, InfluxPushOptions options);
  ~InfluxPusher();
  InfluxPusher(const InfluxPusher&) = delete;
  InfluxPusher& operator=(const InfluxPusher&) = delete;

  /// Pushes now, on the caller's thread; false if it failed (logged).
  bool push_now();
  std::uint64_t pushes() const noexcept;  ///< pushes that succeeded

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netio
