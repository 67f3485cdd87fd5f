// SPDX-License-Identifier: MIT
/// @file
/// Metrics: what a process's sockets and patterns count, read when someone asks (pull), and
/// written as Prometheus' text exposition format 0.0.4 or as InfluxDB line protocol.
///
/// A MetricsRegistry holds collectors: functions that append the current values of some
/// counters to a list when called. Every socket made from a Context adds one to
/// Context::metrics() for its life (it reads the socket's stats(), counters the data path
/// bumps anyway), so reading metrics costs the data path nothing. The HTTP server and the
/// InfluxDB push are in the separate library netio::metrics (netio/metrics/metrics_server.hpp);
/// this header has no dependency beyond the standard library.
///
/// Names follow Prometheus' conventions: `netio_` prefix, counters end in `_total`, base
/// units (bytes, seconds). docs/guide/metrics.md lists every metric netio adds.
/// Thread-safety: every function may be called from any thread; a collector may be removed
/// (its Registration destroyed) while another thread collects: the destruction waits for a
/// call of that collector in progress and no call starts after it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace netio {

/// A summary is written as two samples, `<name>_sum` and `<name>_count` (no quantiles): the
/// Metric's name is the sample's, ending in one of the two; the family is the name without it.
enum class MetricType { counter, gauge, summary };
/// "counter", "gauge", "summary": the words of Prometheus' # TYPE lines.
std::string_view to_string(MetricType type) noexcept;

/// One sample: a series (name and labels) and its current value.
struct Metric {
  std::string name;  ///< [a-zA-Z_:][a-zA-Z0-9_:]*; other characters are written as '_'
  MetricType type = MetricType::counter;
  std::string help;  ///< one line; the first sample of a name gives the name's help
  std::vector<std::pair<std::string, std::string>> labels;  ///< (name, value); values are escaped when written
  double value = 0;
};

class MetricsRegistry {
 public:
  /// Appends the current samples of what it watches to `out`. Called on the collecting
  /// thread; must not block for long, must not add or remove collectors, and should not throw
  /// (an exception is logged and the collector's samples skipped).
  using Collector = std::function<void(std::vector<Metric>& out)>;

  /// Removes its collector when destroyed or reset() (waiting for a call in progress).
  class Registration {
   public:
    Registration() noexcept = default;
    ~Registration() { reset(); }
    Registration(Registration&& other) noexcept = default;
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    void reset() noexcept;
    explicit operator bool() const noexcept { return entry_ != nullptr; }

    struct Entry;  // netio/src/metrics_registry.cpp

   private:
    friend class MetricsRegistry;
    struct State;
    Registration(std::shared_ptr<State> state, std::shared_ptr<Entry> entry) noexcept;
    std::shared_ptr<State> state_;
    std::shared_ptr<Entry> entry_;
  };

  /// An empty registry. Copies share their collectors (a copy is a handle, e.g. for a server
  /// that may outlive the Context whose registry it serves).
  MetricsRegistry();

  [[nodiscard]] Registration add(Collector collector);
  /// Calls every collector, in the order they were added; then the samples kept of removed
  /// ones (keep_removed_totals()).
  std::vector<Metric> collect() const;
  /// From now on, a collector being removed is called once more and its counters and
  /// summaries are kept: collect() returns them after the live ones, folded by name and
  /// labels (a removed socket's total plus the next one's with the same labels is one series
  /// that never goes back). Gauges go with their collector (what a gone socket holds is
  /// nothing). For a program whose sockets end before its last push (the tools' --influx);
  /// off by default. The kept series are bounded by the distinct names and labels seen.
  void keep_removed_totals();
  std::size_t collectors() const;

 private:
  std::shared_ptr<Registration::State> state_;
};

/// `metrics` in Prometheus' text format 0.0.4: samples grouped by family (a summary's _sum and
/// _count under its name), each family with its # HELP and # TYPE once, label values escaped (\\, \", \n). Samples of
/// the same name and labels (two send sockets to one endpoint) are written once, as their sum.
std::string to_prometheus_text(std::span<const Metric> metrics);

/// `metrics` as InfluxDB line protocol, one line per sample:
/// `<name>,<label>=<value>,... value=<value> <timestamp in ns>`; tag keys and values escaped
/// (commas, equals signs, spaces; newlines as spaces), empty label values left out, samples
/// that are not finite skipped.
std::string to_influx_lines(std::span<const Metric> metrics, std::chrono::system_clock::time_point time);

}  // namespace netio
