// SPDX-License-Identifier: MIT
#include "backends/emulated/network_state.hpp"

#include <chrono>

namespace netio::emulated {

Nanos now() noexcept { return std::chrono::steady_clock::now().time_since_epoch(); }

NodePort::NodePort(EventLoop& loop, bool incoming)
    : loop_(loop), incoming_(incoming), capacity_(RateLimit{}, SlowdownSchedule{}, now()) {}

NodePort::~NodePort() {
  if (timer_ != 0) loop_.cancel_timer(timer_);
}

void NodePort::update(const Snapshot& snapshot) {
  if (snapshot.generation == generation_) return;
  generation_ = snapshot.generation;
  const RateLimit limit = incoming_ ? snapshot.config.node_in : snapshot.config.node_out;
  capacity_.reconfigure(limit, SlowdownSchedule(SlowdownSchedule::node_windows(snapshot.config), snapshot.origin),
                        now());
}

bool NodePort::limited(const Snapshot& snapshot) {
  update(snapshot);
  return static_cast<bool>(incoming_ ? snapshot.config.node_in : snapshot.config.node_out);
}

void NodePort::enqueue(PortClient* client, std::size_t bytes, const Snapshot& snapshot) {
  update(snapshot);
  auto [place, added] = flow_of_.try_emplace(client, SharedCapacity::FlowId{0});
  if (added) {
    if (free_flows_.empty()) {
      place->second = static_cast<SharedCapacity::FlowId>(clients_.size());
      clients_.push_back(client);
    } else {
      place->second = free_flows_.back();
      free_flows_.pop_back();
      clients_[place->second] = client;
    }
  }
  capacity_.enqueue(place->second, bytes);
  pump();
}

void NodePort::remove(PortClient* client) noexcept {
  const auto it = flow_of_.find(client);
  if (it == flow_of_.end()) return;
  const auto flow = it->second;
  flow_of_.erase(it);
  clients_[flow] = nullptr;
  capacity_.remove(flow);
  free_flows_.push_back(flow);
}

void NodePort::arm(Nanos at) {
  if (timer_ != 0 && timer_at_ == at) return;
  if (timer_ != 0) loop_.cancel_timer(timer_);
  timer_at_ = at;
  timer_ = loop_.add_timer(at - now(), Nanos(0), [this] {
    timer_ = 0;
    timer_at_ = Nanos::max();
    pump();
  });
}

void NodePort::pump() {
  if (pumping_) {  // a release that enqueued again: the loop below picks it up
    repump_ = true;
    return;
  }
  pumping_ = true;
  do {
    repump_ = false;
    while (!capacity_.empty()) {
      const Nanos t = now();
      const Nanos at = capacity_.next_release_time(t);
      if (at > t) {
        if (at != Nanos::max()) arm(at);
        break;
      }
      const auto id = capacity_.release(t);
      if (PortClient* client = clients_[id]) client->release_from_port(t);  // may enqueue or remove clients
    }
  } while (repump_);
  pumping_ = false;
}

NetworkState::NetworkState(EmulationConfig config) { set_config(std::move(config)); }

std::string link_key(const std::string& host, std::uint16_t port) { return host + ":" + std::to_string(port); }

const EmulationConfig& Snapshot::link_config(const std::string& host, std::uint16_t port) const {
  if (links.empty()) return config;
  const auto it = links.find(link_key(host, port));
  return it == links.end() ? config : it->second;
}

void NetworkState::set_config(EmulationConfig config) {
  std::lock_guard lock(mutex_);
  const std::uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
  auto links = snapshot_ ? snapshot_->links : std::map<std::string, EmulationConfig, std::less<>>{};
  snapshot_ = std::make_shared<const Snapshot>(Snapshot{std::move(config), std::move(links), now(), generation});
  generation_.store(generation, std::memory_order_release);
}

void NetworkState::set_link(std::string key, std::optional<EmulationConfig> config) {
  std::lock_guard lock(mutex_);
  const std::uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
  Snapshot next = *snapshot_;
  if (config)
    next.links[std::move(key)] = std::move(*config);
  else
    next.links.erase(key);
  next.generation = generation;
  snapshot_ = std::make_shared<const Snapshot>(std::move(next));
  generation_.store(generation, std::memory_order_release);
}

std::shared_ptr<const Snapshot> NetworkState::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

NodePort& NetworkState::out_port(EventLoop& loop) {
  if (!out_port_) out_port_ = std::make_unique<NodePort>(loop, false);
  return *out_port_;
}

NodePort& NetworkState::in_port(EventLoop& loop) {
  if (!in_port_) in_port_ = std::make_unique<NodePort>(loop, true);
  return *in_port_;
}

}  // namespace netio::emulated
