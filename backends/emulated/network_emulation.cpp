// SPDX-License-Identifier: MIT
// NetworkEmulation: the public handle of one Context's emulation (netio/emulation.hpp), and
// DelayDistribution::expected_mean (the model library, backends/emulated/model, defines none of
// netio's public API).
#include "netio/emulation.hpp"

#include "backends/emulated/emulated_backend.hpp"
#include "backends/emulated/network_state.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace netio {

NetworkEmulation::NetworkEmulation(EmulationConfig config)
    : state_(std::make_shared<emulated::NetworkState>(std::move(config))) {}

NetworkEmulation::~NetworkEmulation() = default;

void NetworkEmulation::set_config(EmulationConfig config) { state_->set_config(std::move(config)); }

EmulationConfig NetworkEmulation::config() const { return state_->snapshot()->config; }

void NetworkEmulation::set_link(const Endpoint& remote, std::optional<EmulationConfig> config) {
  state_->set_link(emulated::link_key(remote.host, remote.port), std::move(config));
}

std::unique_ptr<Backend> NetworkEmulation::wrap(std::unique_ptr<Backend> inner, EventLoop& loop) {
  return emulated::make_emulated_backend(std::move(inner), state_, loop);
}

NetworkEmulation::Counters NetworkEmulation::counters() const {
  Counters c;
  c.buffers_delayed = state_->buffers_delayed.load(std::memory_order_relaxed);
  c.buffers_held = state_->buffers_held.load(std::memory_order_relaxed);
  c.bytes_sent = state_->bytes_sent.load(std::memory_order_relaxed);
  c.bytes_received = state_->bytes_received.load(std::memory_order_relaxed);
  c.buffers_through_core = state_->buffers_through_core.load(std::memory_order_relaxed);
  return c;
}

double DelayDistribution::expected_mean() const {
  switch (kind) {
    case DelayKind::none: return 0;
    case DelayKind::constant: return value;
    case DelayKind::uniform: return (min + max) / 2;
    case DelayKind::normal: return mean;  // before the draws below 0 are counted as 0
    case DelayKind::lognormal: return std::exp(mu + shape * shape / 2);
    case DelayKind::exponential: return 1 / lambda;
    case DelayKind::pareto: return alpha > 1 ? alpha * scale / (alpha - 1) : std::numeric_limits<double>::infinity();
    case DelayKind::table: {
      double sum = 0;
      for (double v : table) sum += std::max(v, 0.0);
      return table.empty() ? 0 : sum / static_cast<double>(table.size());
    }
  }
  return 0;
}

}  // namespace netio
