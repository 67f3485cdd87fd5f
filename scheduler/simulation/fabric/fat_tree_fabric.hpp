// SPDX-License-Identifier: MIT
#pragma once
// A packet-level two-level fat-tree, simulated by ns-3, behind an interface with no ns-3 type:
// ns-3 3.37's headers compile as C++17 only, so this library is built as C++17 and the C++20
// code of netio (the DFS driver, the tests) sees only this header (docs/design/fabric-model.md).
//
// The network: `leaves` leaf switches with `hosts_per_leaf` hosts each, and `spines` spine
// switches, every leaf linked to every spine. Every link is point-to-point, full duplex, of a
// given rate and propagation delay. Every switch port queues its outgoing packets first come
// first served in a drop-tail buffer of `port_buffer_bytes`; packets are at most `mtu_bytes`
// long. Routing is static by destination: a packet to host d leaves its leaf by the uplink to
// spine d mod spines (D-mod-k), or, with `ecmp`, by an uplink drawn at random per packet.
// Messages travel over TCP (ns-3's own, NewReno), one connection per ordered pair of hosts,
// opened by the first message between them.
//
// Time is simulated and only advances in run_until() or run(); everything here is
// single-threaded. A run is deterministic for its seed. ns-3's simulator is a process-wide
// singleton: one FatTreeFabric may exist at a time (a second one throws std::logic_error).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace netio::fabric_model {

using SimTime = std::chrono::nanoseconds;

struct FatTreeConfig {
  std::size_t leaves = 2;
  std::size_t hosts_per_leaf = 4;
  std::size_t spines = 4;                               // with equal rates, hosts_per_leaf / spines : 1 oversubscribed
  double host_link_bits_per_second = 10e9;              // host <-> leaf
  double uplink_bits_per_second = 10e9;                 // leaf <-> spine
  SimTime link_delay{std::chrono::microseconds(1)};     // propagation delay of every link
  std::size_t port_buffer_bytes = 128 * 1024;           // per switch port (egress), drop-tail
  std::size_t host_buffer_bytes = 4 * 1024 * 1024;      // a host's network interface queue
  std::size_t mtu_bytes = 1500;                         // IP packet size on every link
  bool ecmp = false;                                    // random uplink per packet instead of D-mod-k
  SimTime tcp_min_rto{std::chrono::milliseconds(200)};  // Linux's; data-centre studies lower it
  // Channel 1's connections on a strict-priority band at every port (ns-3's PrioQueueDisc,
  // told apart by their IP TOS, low delay), channel 0's on the other; each band a drop-tail
  // FIFO of port_buffer_bytes (host_buffer_bytes at a host), the device's own queue one packet.
  bool control_lane = false;
  std::uint32_t seed = 1;
};

// Counters of the whole network since construction.
struct FabricCounters {
  std::uint64_t events = 0;           // ns-3 events executed
  std::uint64_t packets_sent = 0;     // packets put on any link (every hop counts)
  std::uint64_t packets_dropped = 0;  // dropped by a full switch port or host queue
  std::uint64_t messages_delivered = 0;
};

class FatTreeFabric {
 public:
  // Called once when the last byte of a message has reached the receiving host.
  using Delivered = std::function<void(SimTime delivered_at)>;

  // Throws std::invalid_argument for a zero count, rate, MTU or buffer, or a buffer smaller
  // than one packet; std::logic_error if another FatTreeFabric exists.
  explicit FatTreeFabric(const FatTreeConfig& config);
  ~FatTreeFabric();
  FatTreeFabric(const FatTreeFabric&) = delete;
  FatTreeFabric& operator=(const FatTreeFabric&) = delete;

  std::size_t hosts() const;
  // (hosts_per_leaf x host rate) / (spines x uplink rate): 1 for 1:1, 2 for 2:1.
  double oversubscription() const;

  // Connections per ordered pair of hosts: a message on channel 1 does not wait behind one on
  // channel 0 in a TCP stream (the pattern's control connection beside its data connection).
  static constexpr std::size_t channels = 2;

  // Queues a message of `bytes` (> 0) from host `from` to host `to` (different hosts, both
  // < hosts()) behind the earlier messages of the same pair and channel (< channels, each a
  // TCP connection of its own); `on_delivered` runs in simulated time when its last byte
  // arrives. Throws std::out_of_range / std::invalid_argument.
  void send(std::size_t from, std::size_t to, std::uint64_t bytes, Delivered on_delivered, std::size_t channel = 0);
  // Runs `action` at simulated time `at` (not before now()).
  void at(SimTime at, std::function<void()> action);

  // Runs the events before `until`, and those at `until` scheduled before this call; now() is
  // `until` afterwards, unless a callback called stop(). An `until` before now() does nothing.
  void run_until(SimTime until);
  // Runs until no event is left or stop(). ns-3's TCP keeps timers after the last delivery
  // (now() may end seconds later): to follow messages, prefer run_until() or stop().
  void run();
  // From inside a callback: run() / run_until() return after the current event.
  void stop();
  SimTime now() const;

  FabricCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netio::fabric_model
