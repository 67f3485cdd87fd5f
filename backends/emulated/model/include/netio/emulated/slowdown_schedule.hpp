// SPDX-License-Identifier: MIT
// When slow-down windows are in force, for one connection or one node port. Pure: time is
// passed in (nanoseconds on the caller's clock); the windows count from `origin`, the time
// their configuration took effect.
#pragma once

#include "netio/emulation.hpp"

#include <chrono>
#include <optional>
#include <vector>

namespace netio::emulated {

using Nanos = std::chrono::nanoseconds;

class SlowdownSchedule {
 public:
  SlowdownSchedule() = default;
  SlowdownSchedule(std::vector<SlowdownWindow> windows, Nanos origin);

  // The product of the rate factors of the windows in force at `t` (1 outside every window).
  double rate_factor(Nanos t) const noexcept { return windows_.empty() ? 1.0 : windowed_rate_factor(t); }
  // The sum of the extra delays of the windows in force at `t`.
  Nanos extra_delay(Nanos t) const noexcept { return windows_.empty() ? Nanos(0) : windowed_extra_delay(t); }
  // The first time after `t` at which a window starts or ends; none when nothing changes.
  std::optional<Nanos> next_change_after(Nanos t) const noexcept {
    return windows_.empty() ? std::nullopt : windowed_next_change_after(t);
  }
  bool empty() const noexcept { return windows_.empty(); }

  // The windows of `config` that apply to this node (node, or node:ID with ID = its node=).
  static std::vector<SlowdownWindow> node_windows(const EmulationConfig& config);
  // Those, plus the link windows naming `host`:`port`, a send socket's remote endpoint (a
  // link host of "*" or 0.0.0.0 matches every host).
  static std::vector<SlowdownWindow> link_windows(const EmulationConfig& config, const std::string& host,
                                                  std::uint16_t port);

 private:
  // The three above with windows: out of line, so that the common case (none, asked per
  // buffer by every token bucket) stays a test inline.
  double windowed_rate_factor(Nanos t) const noexcept;
  Nanos windowed_extra_delay(Nanos t) const noexcept;
  std::optional<Nanos> windowed_next_change_after(Nanos t) const noexcept;
  bool in_force(const SlowdownWindow& w, Nanos t) const noexcept;
  std::vector<SlowdownWindow> windows_;
  Nanos origin_{0};
};

}  // namespace netio::emulated
