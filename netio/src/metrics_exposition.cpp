// SPDX-License-Identifier: MIT
// The two text formats of netio/metrics.hpp: Prometheus' exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/) and InfluxDB's line protocol
// (https://docs.influxdata.com/influxdb/v1/write_protocols/line_protocol_reference/).
// Names and label values may come from peers (endpoints, tags), so every one is sanitized
// or escaped here, never trusted.
#include "netio/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace netio {
namespace {

bool name_char(char c, bool first, bool colon_ok) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
  return letter || (!first && c >= '0' && c <= '9');
}

/// A metric name (colons allowed) or label name (not): invalid characters become '_'.
std::string sanitized_name(std::string_view name, bool colon_ok) {
  std::string out(name.empty() ? "_" : name);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!name_char(out[i], i == 0, colon_ok)) out[i] = '_';
  return out;
}

/// Escapes a label value (`quoted`: also '"') or a # HELP text for the exposition format.
std::string prometheus_escaped(std::string_view text, bool quoted) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (quoted && c == '"')
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

std::string prometheus_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

/// The series' key: its labels as written, sorted by label name.
std::string series_labels(const Metric& metric) {
  auto labels = metric.labels;
  std::sort(labels.begin(), labels.end());
  std::string out;
  for (const auto& [name, value] : labels) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", sanitized_name(name, false), prometheus_escaped(value, true));
  }
  if (!out.empty()) out += "}";
  return out;
}

/// Escapes InfluxDB's special characters of a measurement (commas, spaces) or of a tag key
/// or value (also equals signs); a newline cannot be escaped and becomes a space.
std::string influx_escaped(std::string_view text, bool tag) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\r') c = ' ';
    if (c == ',' || c == ' ' || (tag && c == '=') || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string_view to_string(MetricType type) noexcept {
  switch (type) {
    case MetricType::counter: return "counter";
    case MetricType::gauge: return "gauge";
    case MetricType::summary: return "summary";
  }
  return "untyped";
}

std::string to_prometheus_text(std::span<const Metric> metrics) {
  struct Family {
    MetricType type;
    std::string help;
    std::map<std::string, double> series;  // sample suffix and labels as written -> value (duplicates summed)
  };
  std::map<std::string, Family> families;  // sorted by name: a stable, diffable exposition
  for (const Metric& metric : metrics) {
    std::string name = sanitized_name(metric.name, true);
    std::string_view suffix;  // a summary's samples: the family is the name without _sum or _count
    if (metric.type == MetricType::summary) {
      for (const std::string_view s : {std::string_view("_sum"), std::string_view("_count")}) {
        if (name.size() > s.size() && name.ends_with(s)) {
          suffix = s;
          name = name.substr(0, name.size() - s.size());
          break;
        }
      }
    }
    auto [it, fresh] = families.try_emplace(std::move(name), Family{metric.type, metric.help, {}});
    it->second.series[std::string(suffix) + series_labels(metric)] += metric.value;
  }
  std::string out;
  for (const auto& [name, family] : families) {
    if (!family.help.empty()) out += fmt::format("# HELP {} {}\n", name, prometheus_escaped(family.help, false));
    out += fmt::format("# TYPE {} {}\n", name, to_string(family.type));
    for (const auto& [sample, value] : family.series)
      out += fmt::format("{}{} {}\n", name, sample, prometheus_value(value));
  }
  return out;
}

std::string to_influx_lines(std::span<const Metric> metrics, std::chrono::system_clock::time_point time) {
  const auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
  std::string out;
  for (const Metric& metric : metrics) {
    if (!std::isfinite(metric.value)) continue;  // the line protocol has no NaN or infinity
    out += influx_escaped(sanitized_name(metric.name, true), false);
    auto labels = metric.labels;
    std::sort(labels.begin(), labels.end());  // InfluxDB's advice: tags sorted by key
    for (const auto& [name, value] : labels) {
      if (value.empty()) continue;  // an empty tag value is not allowed
      out += fmt::format(",{}={}", influx_escaped(sanitized_name(name, false), true), influx_escaped(value, true));
    }
    out += fmt::format(" value={} {}\n", metric.value, nanoseconds);
  }
  return out;
}

}  // namespace netio
