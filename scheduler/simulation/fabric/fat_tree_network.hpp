// SPDX-License-Identifier: MIT
#pragma once
// The ns-3 fat-tree (fat_tree_fabric.hpp) as the simulator's packet network
// (netio::scheduler::simulation::PacketNetwork, NetworkModel::packet): netio_tsbench --simulate
// --network fat-tree. Every message of a run (contributions, acknowledgements, credits,
// reports, requests, proposals, clock probes and samples, hellos) crosses the fat-tree as TCP
// segments through its drop-tail switch ports (docs/design/fabric-model.md).
//
// The hosts, by rank: the N inputs first, then the M compute nodes, leaf by leaf
// (ceil((N + M) / leaf_size) leaves; a DAQ's readout nodes apart from its compute farm, so
// every contribution from an input leaf crosses the spines). Every link at the host rate (the
// spec's in=, or out=); spines = leaf_size / oversubscription, each uplink at the host rate.
// C++20, as the simulator: this file has no ns-3 type (fat_tree_fabric.hpp is the C++17 side).
#include "netio/scheduler/simulation/simulate.hpp"

#include <chrono>
#include <cstddef>

namespace netio::fabric_model {

struct FatTreeNetworkOptions {
  std::size_t leaf_size = 16;                  // hosts per leaf switch
  std::size_t oversubscription = 1;            // 1, 2, 4 ...: a divisor of leaf_size
  std::size_t port_buffer_bytes = 128 * 1024;  // per switch port, drop-tail
  std::size_t mtu_bytes = 9000;                // jumbo frames: 7 packets per 64 KiB
  std::chrono::nanoseconds tcp_min_rto{std::chrono::milliseconds(200)};
  std::chrono::nanoseconds link_delay{std::chrono::microseconds(1)};
  bool ecmp = false;  // a random uplink per packet instead of D-mod-k
  // Every message but the contributions on the control connections (channel 1), which a
  // strict-priority band at every port serves first (FatTreeConfig::control_lane).
  bool control_lane = false;
};

// Throws netio::Error (Errc::invalid_option, naming the option) when the options cannot make a
// fat-tree: an oversubscription that does not divide the leaf size (check_fat_tree_shape()).
void check(const FatTreeNetworkOptions& options);

// The factory of SimulationOptions::packet_network. The network it makes throws
// netio::Error (Errc::invalid_option) for a system without a port rate.
scheduler::simulation::PacketNetworkFactory fat_tree_network(const FatTreeNetworkOptions& options);

}  // namespace netio::fabric_model
