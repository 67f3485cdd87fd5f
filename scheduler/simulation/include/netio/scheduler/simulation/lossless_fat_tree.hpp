// SPDX-License-Identifier: MIT
// The lossless fat-tree (LosslessFabric) as the simulator's packet network (PacketNetwork,
// NetworkModel::packet): netio_tsbench --simulate --network fat-tree-lossless. Every message
// of a run (contributions, acknowledgements, credits, reports, requests, proposals, clock
// probes and samples, hellos) crosses it as packets through its credit-flow-controlled
// switch ports (docs/design/fabric-model.md).
//
// The hosts by rank, as the ns-3 fat-tree's (fabric/fat_tree_network.hpp): the N inputs first,
// then the M compute nodes, leaf by leaf (ceil((N + M) / leaf_size) leaves), so every
// contribution crosses the spines. Every link at the host rate (the spec's in=, or out=);
// spines = leaf_size / oversubscription.
#pragma once

#include "netio/scheduler/simulation/simulate.hpp"

#include <cstddef>
#include <cstdint>

namespace netio::scheduler::simulation {

struct LosslessFatTreeOptions {
  std::size_t leaf_size = 16;                    // hosts per leaf switch
  std::size_t oversubscription = 1;              // 1, 2, 4 ...: a divisor of leaf_size
  std::uint64_t port_buffer_bytes = 128 * 1024;  // per switch input port and lane: its link's credits
  std::uint64_t mtu_bytes = 4096;                // InfiniBand's largest
  Duration link_delay{1000};                     // propagation, every link
  bool adaptive = false;                         // the least loaded uplink instead of D-mod-k
  bool control_lane = false;                     // control messages on a virtual lane of their own, first
};

// Throws netio::Error (Errc::invalid_option) naming the option when a leaf of `leaf_size`
// cannot be `oversubscription`:1 oversubscribed (spines = leaf size / oversubscription).
// Both fat-trees' (this and the ns-3 one's) check.
void check_fat_tree_shape(std::size_t leaf_size, std::size_t oversubscription);

// The factory of SimulationOptions::packet_network. Throws as check_fat_tree_shape(), and for
// an MTU or a buffer the fabric refuses; the network it makes throws netio::Error
// (Errc::invalid_option) for a system without a port rate.
PacketNetworkFactory lossless_fat_tree_network(const LosslessFatTreeOptions& options);

}  // namespace netio::scheduler::simulation
