// SPDX-License-Identifier: MIT
#include "fat_tree_network.hpp"

#include "fat_tree_fabric.hpp"

#include "netio/error.hpp"
#include "netio/scheduler/simulation/lossless_fat_tree.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace netio::fabric_model {
namespace {

using scheduler::Time;
namespace sim = scheduler::simulation;

class FatTreeNetwork final : public sim::PacketNetwork {
 public:
  explicit FatTreeNetwork(const FatTreeConfig& config) : fabric_(config), control_lane_(config.control_lane) {}

  // With the control lane, every control message (acknowledgements and credits too) on the
  // pair's control connection, whose packets the ports serve first; without it, as the
  // pattern sends them, sharing the data queues.
  void send(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, std::uint32_t channel, bool control,
            std::function<void()> delivered) override {
    fabric_.send(
        from, to, bytes, [delivered = std::move(delivered)](SimTime) { delivered(); },
        control_lane_ && control ? 1 : channel);
  }
  void run_until(Time until) override { fabric_.run_until(until); }
  void stop() override { fabric_.stop(); }
  Time now() const override { return fabric_.now(); }
  std::string summary() const override {
    const auto c = fabric_.counters();
    return fmt::format("fat-tree: {} hosts, {} ns-3 events, {} packet hops, {} dropped, {} messages", fabric_.hosts(),
                       c.events, c.packets_sent, c.packets_dropped, c.messages_delivered);
  }

 private:
  FatTreeFabric fabric_;
  bool control_lane_;
};

}  // namespace

void check(const FatTreeNetworkOptions& o) {
  scheduler::simulation::check_fat_tree_shape(o.leaf_size, o.oversubscription);
}

sim::PacketNetworkFactory fat_tree_network(const FatTreeNetworkOptions& options) {
  check(options);
  return [options](const sim::SimulatedSystem& system) -> std::unique_ptr<sim::PacketNetwork> {
    const auto& e = system.nodes.front();
    const RateLimit& rate = e.node_in ? e.node_in : e.node_out;
    if (!rate) {
      throw Error(
          Errc::invalid_option,
          fmt::format("--network fat-tree needs the hosts' link rate: in= or out= in --emulate '{}'", system.emulate));
    }
    const std::size_t hosts = std::size_t{system.inputs()} + system.computes();
    FatTreeConfig c;
    c.hosts_per_leaf = options.leaf_size;
    c.leaves = (hosts + options.leaf_size - 1) / options.leaf_size;
    c.spines = options.leaf_size / options.oversubscription;
    c.host_link_bits_per_second = rate.bytes_per_second * 8;
    c.uplink_bits_per_second = c.host_link_bits_per_second;
    c.link_delay = options.link_delay;
    c.port_buffer_bytes = options.port_buffer_bytes;
    c.mtu_bytes = options.mtu_bytes;
    c.ecmp = options.ecmp;
    c.tcp_min_rto = options.tcp_min_rto;
    c.control_lane = options.control_lane;
    c.seed = static_cast<std::uint32_t>(e.seed);
    try {
      return std::make_unique<FatTreeNetwork>(c);
    } catch (const std::invalid_argument& x) {
      throw Error(Errc::invalid_option, fmt::format("--network fat-tree: {}", x.what()));
    }
  };
}

}  // namespace netio::fabric_model
