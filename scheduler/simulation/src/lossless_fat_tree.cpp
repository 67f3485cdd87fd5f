// SPDX-License-Identifier: MIT
#include "netio/scheduler/simulation/lossless_fat_tree.hpp"

#include "netio/scheduler/simulation/lossless_fabric.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

namespace netio::scheduler::simulation {
namespace {

class LosslessFatTree final : public PacketNetwork {
 public:
  explicit LosslessFatTree(const LosslessFabricConfig& config) : fabric_(config) {}

  void send(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, std::uint32_t channel, bool control,
            std::function<void()> delivered) override {
    fabric_.send(from, to, bytes, channel, control, std::move(delivered));
  }
  void run_until(Time until) override { fabric_.run_until(until); }
  void stop() override { fabric_.stop(); }
  Time now() const override { return fabric_.now(); }
  std::string summary() const override {
    const auto& c = fabric_.counters();
    return fmt::format(
        "fat-tree-lossless: {} hosts, {} spines, {} events, {} packet hops, {} credit stalls, "
        "0 dropped, {} messages",
        fabric_.hosts(), fabric_.config().spines, c.events, c.packet_hops, c.credit_stalls, c.messages_delivered);
  }

 private:
  LosslessFabric fabric_;
};

LosslessFabricConfig fabric_config(const LosslessFatTreeOptions& o, std::size_t hosts, double bytes_per_second,
                                   std::uint64_t seed) {
  LosslessFabricConfig c;
  c.hosts_per_leaf = o.leaf_size;
  c.leaves = (hosts + o.leaf_size - 1) / o.leaf_size;
  c.spines = o.leaf_size / o.oversubscription;
  c.host_link_bytes_per_second = bytes_per_second;
  c.uplink_bytes_per_second = bytes_per_second;
  c.link_delay = o.link_delay;
  c.port_buffer_bytes = o.port_buffer_bytes;
  c.mtu_bytes = o.mtu_bytes;
  c.adaptive = o.adaptive;
  c.control_lane = o.control_lane;
  c.seed = seed;
  return c;
}

}  // namespace

void check_fat_tree_shape(std::size_t leaf_size, std::size_t oversubscription) {
  if (leaf_size == 0) throw Error(Errc::invalid_option, "--leaf-size must be at least 1");
  if (oversubscription == 0 || leaf_size % oversubscription != 0) {
    throw Error(Errc::invalid_option, fmt::format("--oversubscription {}:1 must divide the leaf size ({}): spines = "
                                                  "leaf size / oversubscription",
                                                  oversubscription, leaf_size));
  }
}

PacketNetworkFactory lossless_fat_tree_network(const LosslessFatTreeOptions& options) {
  check_fat_tree_shape(options.leaf_size, options.oversubscription);
  try {
    LosslessFabric probe(fabric_config(options, 1, 1e9, 1));  // the MTU and buffer, before a run
  } catch (const std::invalid_argument& x) {
    throw Error(Errc::invalid_option, fmt::format("--network fat-tree-lossless: {}", x.what()));
  }
  return [options](const SimulatedSystem& system) -> std::unique_ptr<PacketNetwork> {
    const auto& e = system.nodes.front();
    const RateLimit& rate = e.node_in ? e.node_in : e.node_out;
    if (!rate) {
      throw Error(Errc::invalid_option,
                  fmt::format("--network fat-tree-lossless needs the hosts' link rate: in= or out= in --emulate '{}'",
                              system.emulate));
    }
    const std::size_t hosts = std::size_t{system.inputs()} + system.computes();
    return std::make_unique<LosslessFatTree>(fabric_config(options, hosts, rate.bytes_per_second, e.seed));
  };
}

}  // namespace netio::scheduler::simulation
