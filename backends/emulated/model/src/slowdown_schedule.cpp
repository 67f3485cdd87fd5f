// SPDX-License-Identifier: MIT
#include "netio/emulated/slowdown_schedule.hpp"

#include <algorithm>

namespace netio::emulated {

SlowdownSchedule::SlowdownSchedule(std::vector<SlowdownWindow> windows, Nanos origin)
    : windows_(std::move(windows)), origin_(origin) {}

bool SlowdownSchedule::in_force(const SlowdownWindow& w, Nanos t) const noexcept {
  const Nanos since = t - origin_ - w.at;
  if (since < Nanos(0)) return false;
  if (w.every) return since % *w.every < w.duration;
  return since < w.duration;
}

double SlowdownSchedule::windowed_rate_factor(Nanos t) const noexcept {
  double factor = 1;
  for (const auto& w : windows_) {
    if (in_force(w, t)) factor *= w.rate_factor;
  }
  return factor;
}

Nanos SlowdownSchedule::windowed_extra_delay(Nanos t) const noexcept {
  Nanos extra{0};
  for (const auto& w : windows_) {
    if (in_force(w, t)) extra += w.extra_delay;
  }
  return extra;
}

std::optional<Nanos> SlowdownSchedule::windowed_next_change_after(Nanos t) const noexcept {
  std::optional<Nanos> next;
  auto consider = [&](Nanos candidate) {
    if (candidate > t && (!next || candidate < *next)) next = candidate;
  };
  for (const auto& w : windows_) {
    const Nanos start = origin_ + w.at;
    if (!w.every || t < start) {
      consider(start);
      consider(start + w.duration);
      continue;
    }
    const Nanos period = *w.every;
    const Nanos cycle_start = start + ((t - start) / period) * period;
    consider(cycle_start + w.duration);
    consider(cycle_start + period);
  }
  return next;
}

std::vector<SlowdownWindow> SlowdownSchedule::node_windows(const EmulationConfig& config) {
  std::vector<SlowdownWindow> result;
  for (const auto& w : config.slowdowns) {
    if (w.target != SlowdownWindow::Target::node) continue;
    if (w.node_id && (!config.node_id || *config.node_id != *w.node_id)) continue;
    result.push_back(w);
  }
  return result;
}

std::vector<SlowdownWindow> SlowdownSchedule::link_windows(const EmulationConfig& config, const std::string& host,
                                                           std::uint16_t port) {
  std::vector<SlowdownWindow> result = node_windows(config);
  for (const auto& w : config.slowdowns) {
    if (w.target != SlowdownWindow::Target::link || w.link_port != port) continue;
    if (w.link_host == host || w.link_host == "*" || w.link_host == "0.0.0.0") result.push_back(w);
  }
  return result;
}

}  // namespace netio::emulated
