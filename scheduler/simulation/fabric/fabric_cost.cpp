// SPDX-License-Identifier: MIT
// What a packet costs in the fat-tree model: every host sends one message to every other
// host at once (all-to-all, the event builder's pattern), and the run prints the simulator's
// events and packet hops per second of CPU. A benchmark program (docs/design/fabric-model.md),
// not installed:
//   fabric_cost [leaves] [hosts_per_leaf] [spines] [message_bytes] [port_buffer_bytes]
#include <fat_tree_fabric.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace {

std::size_t argument(int argc, char** argv, int index, std::size_t otherwise) {
  return index < argc ? std::stoull(argv[index]) : otherwise;
}

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char** argv) {
  using namespace netio::fabric_model;
  FatTreeConfig config;
  config.leaves = argument(argc, argv, 1, 4);
  config.hosts_per_leaf = argument(argc, argv, 2, 8);
  config.spines = argument(argc, argv, 3, 4);
  const std::size_t bytes = argument(argc, argv, 4, 64 * 1024);
  config.port_buffer_bytes = argument(argc, argv, 5, config.port_buffer_bytes);
  config.tcp_min_rto = std::chrono::milliseconds(1);

  const double start = cpu_seconds();
  FatTreeFabric fabric(config);
  const double built = cpu_seconds();
  std::size_t delivered = 0;
  SimTime last{};
  for (std::size_t from = 0; from < fabric.hosts(); ++from) {
    for (std::size_t to = 0; to < fabric.hosts(); ++to) {
      if (from != to) fabric.send(from, to, bytes, [&](SimTime at) { ++delivered, last = at; });
    }
  }
  fabric.run_until(std::chrono::seconds(100));
  const double cpu = cpu_seconds() - built;
  const FabricCounters counters = fabric.counters();
  const std::size_t messages = fabric.hosts() * (fabric.hosts() - 1);
  std::printf(
      "{\"hosts\": %zu, \"leaves\": %zu, \"spines\": %zu, \"oversubscription\": %.2f, \"message_bytes\": %zu,\n"
      " \"messages\": %zu, \"delivered\": %zu, \"simulated_s\": %.6f, \"build_cpu_s\": %.3f, \"run_cpu_s\": %.3f,\n"
      " \"events\": %llu, \"packet_hops\": %llu, \"drops\": %llu,\n"
      " \"events_per_cpu_s\": %.0f, \"packet_hops_per_cpu_s\": %.0f, \"ns_per_packet_hop\": %.0f}\n",
      fabric.hosts(), config.leaves, config.spines, fabric.oversubscription(), bytes, messages, delivered,
      std::chrono::duration<double>(last).count(), built - start, cpu, static_cast<unsigned long long>(counters.events),
      static_cast<unsigned long long>(counters.packets_sent), static_cast<unsigned long long>(counters.packets_dropped),
      counters.events / cpu, counters.packets_sent / cpu, cpu * 1e9 / static_cast<double>(counters.packets_sent));
  return delivered == messages ? EXIT_SUCCESS : EXIT_FAILURE;
}
