// SPDX-License-Identifier: MIT
// The loop-side state of one Context's emulation: the configuration in force (replaceable
// from any thread), the node's shared ports (out=, in=) and the counters.
#pragma once

#include "netio/backend/event_loop.hpp"
#include "netio/emulated/shared_capacity.hpp"
#include "netio/emulation.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace netio::emulated {

// The clock of the emulation: CLOCK_MONOTONIC, the event loop's timer clock.
Nanos now() noexcept;

// A configuration and when it took effect (slow-down windows count from there).
struct Snapshot {
  EmulationConfig config;
  std::map<std::string, EmulationConfig, std::less<>> links;  // by "host:port", see link_key()
  Nanos origin{0};
  std::uint64_t generation = 0;

  // What a connection to host:port uses for its delay, rate and link slow-downs.
  const EmulationConfig& link_config(const std::string& host, std::uint16_t port) const;
};

std::string link_key(const std::string& host, std::uint16_t port);

// Something that waits in a NodePort: the port calls it when its buffer may go.
class PortClient {
 public:
  virtual ~PortClient() = default;
  virtual void release_from_port(Nanos now) = 0;
};

// A node's shared capacity (in= or out=) on the event loop: flows enqueue their next buffer,
// the port releases them fairly at its rate, on one loop timer. Loop thread only.
class NodePort {
 public:
  NodePort(EventLoop& loop, bool incoming);
  ~NodePort();
  NodePort(const NodePort&) = delete;
  NodePort& operator=(const NodePort&) = delete;

  // Whether the current configuration limits this port.
  bool limited(const Snapshot& snapshot);
  void enqueue(PortClient* client, std::size_t bytes, const Snapshot& snapshot);
  void remove(PortClient* client) noexcept;

 private:
  void update(const Snapshot& snapshot);
  void pump();
  void arm(Nanos at);

  EventLoop& loop_;
  bool incoming_;
  std::uint64_t generation_ = ~std::uint64_t{0};
  SharedCapacity capacity_;
  // The clients' flows in capacity_: numbered densely, a number free again after remove().
  std::unordered_map<PortClient*, SharedCapacity::FlowId> flow_of_;
  std::vector<PortClient*> clients_;  // by flow; nullptr: free
  std::vector<SharedCapacity::FlowId> free_flows_;
  EventLoop::TimerId timer_ = 0;
  Nanos timer_at_{Nanos::max()};
  bool pumping_ = false;
  bool repump_ = false;
};

class NetworkState {
 public:
  explicit NetworkState(EmulationConfig config);

  void set_config(EmulationConfig config);
  void set_link(std::string key, std::optional<EmulationConfig> config);
  // The configuration in force (any thread; cheap when unchanged: compare generation()).
  std::shared_ptr<const Snapshot> snapshot() const;
  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }

  // Loop thread: the node's ports, made on first use.
  NodePort& out_port(EventLoop& loop);
  NodePort& in_port(EventLoop& loop);
  // A new connection's number in the node (its PRNG stream).
  std::uint64_t next_stream() noexcept { return streams_.fetch_add(1, std::memory_order_relaxed); }

  std::atomic<std::uint64_t> buffers_delayed{0};
  std::atomic<std::uint64_t> buffers_held{0};
  std::atomic<std::uint64_t> bytes_sent{0};
  std::atomic<std::uint64_t> bytes_received{0};
  std::atomic<std::uint64_t> buffers_through_core{0};

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> snapshot_;  // guarded by mutex_
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::uint64_t> streams_{0};
  std::unique_ptr<NodePort> out_port_;  // loop thread only
  std::unique_ptr<NodePort> in_port_;
};

}  // namespace netio::emulated
