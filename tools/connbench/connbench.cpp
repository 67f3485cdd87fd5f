// SPDX-License-Identifier: MIT
#include "connbench/connbench.hpp"

#include "common/termination.hpp"

#include "netio/context.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

namespace netio::tools {

std::vector<std::uint32_t> draw_accesses(const ConnbenchPattern& p) {
  if (p.peers == 0 || p.hot > p.peers) {
    throw Error(Errc::invalid_option,
                fmt::format("the hot set ({}) must not be larger than the peers ({}), which must be at least 1", p.hot,
                            p.peers));
  }
  std::mt19937_64 random(p.seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::vector<std::uint32_t> accesses;
  accesses.reserve(p.accesses);
  for (std::size_t i = 0; i < p.accesses; ++i) {
    const bool hot = p.hot > 0 && (p.hot == p.peers || coin(random) < p.hot_share);
    const std::size_t d = hot ? random() % p.hot : p.hot + random() % (p.peers - p.hot);
    accesses.push_back(static_cast<std::uint32_t>(d));
  }
  return accesses;
}

namespace {

// P receive sockets of the mode's kind; each message's first 8 bytes are its sequence
// number for that destination, checked here. Low-latency messages are counted on the
// receivers' loop thread, high-throughput ones by a draining thread of our own.
class Receivers {
 public:
  Receivers(Context& context, const ConnbenchConfig& config, std::size_t peers) : expected_(peers) {
    const Endpoint local = Endpoint::parse(config.base);
    for (std::size_t i = 0; i < peers; ++i) {
      if (config.mode == SendMode::low_latency) {
        LowLatencyReceiveOptions options;
        options.max_message_size = std::max<std::size_t>(config.size, 4096);
        low_latency_.push_back(std::make_unique<LowLatencyReceiveSocket>(
            context, local, [this, i](std::span<const std::byte> m, const Peer&) { take(i, m); }, options));
        endpoints_.push_back(low_latency_.back()->local_endpoint());
      } else {
        high_throughput_.push_back(std::make_unique<HighThroughputReceiveSocket>(context, local));
        endpoints_.push_back(high_throughput_.back()->local_endpoint());
      }
    }
    if (!high_throughput_.empty()) {
      drainer_ = std::thread([this] {
        while (!stop_.load(std::memory_order_relaxed)) {
          std::size_t taken = 0;
          for (std::size_t i = 0; i < high_throughput_.size(); ++i) {
            taken +=
                high_throughput_[i]->recv_each(4096, std::chrono::nanoseconds(0), [&](std::span<const std::byte> m) {
                  take(i, m);
                  return true;
                });
          }
          if (taken == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      });
    }
  }
  ~Receivers() {
    stop_ = true;
    if (drainer_.joinable()) drainer_.join();
  }
  Receivers(const Receivers&) = delete;
  Receivers& operator=(const Receivers&) = delete;

  const Endpoint& endpoint(std::size_t i) const { return endpoints_[i]; }
  std::uint64_t received() const { return received_.load(std::memory_order_acquire); }
  std::uint64_t out_of_order() const { return out_of_order_.load(std::memory_order_relaxed); }

 private:
  void take(std::size_t i, std::span<const std::byte> m) {
    std::uint64_t sequence = 0;
    if (m.size() >= 8) std::memcpy(&sequence, m.data(), 8);
    if (m.size() < 8 || sequence != expected_[i]) out_of_order_.fetch_add(1, std::memory_order_relaxed);
    expected_[i] = sequence + 1;  // one thread per receiver kind takes every message
    received_.fetch_add(1, std::memory_order_release);
  }

  std::vector<std::unique_ptr<LowLatencyReceiveSocket>> low_latency_;
  std::vector<std::unique_ptr<HighThroughputReceiveSocket>> high_throughput_;
  std::vector<Endpoint> endpoints_;
  std::vector<std::uint64_t> expected_;
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> out_of_order_{0};
  std::atomic<bool> stop_{false};
  std::thread drainer_;
};

MultiDestinationSendOptions send_options(const ConnbenchConfig& config, std::size_t max_connections,
                                         ConnectionPolicy policy) {
  MultiDestinationSendOptions o;
  o.mode = config.mode;
  o.max_connections = max_connections;
  o.policy = policy;
  o.low_latency.buffer_count = config.buffers;
  o.low_latency.buffer_size = config.buffer_size;
  o.high_throughput.page_count = config.buffers;
  o.high_throughput.page_size = config.buffer_size;
  o.high_throughput.flush_timeout = std::chrono::milliseconds(1);
  return o;
}

ContextOptions context_options(const ConnbenchConfig& config, std::optional<int> cpu) {
  return ContextOptions{.busy_poll = false, .cpu = cpu, .wrap_backend = {}, .emulation = config.emulate};
}

}  // namespace

ConnbenchResult run_connbench(const ConnbenchConfig& config, const std::vector<std::uint32_t>& accesses,
                              std::size_t peers, std::size_t burst, std::size_t max_connections,
                              ConnectionPolicy policy, const Deadline& deadline) {
  Context receiving(context_options(config, std::nullopt));
  Context sending(context_options(config, config.sender_loop_cpu));
  Receivers receivers(receiving, config, peers);
  ConnbenchResult result;
  result.max_connections = max_connections;
  result.policy = policy;
  std::vector<std::uint64_t> sequence(peers, 0);
  std::vector<std::byte> message(std::max<std::size_t>(config.size, 8), std::byte{0x5a});
  MultiDestinationSendSocket socket(sending, send_options(config, max_connections, policy));

  const auto start = std::chrono::steady_clock::now();
  for (const std::uint32_t d : accesses) {
    if (stop_requested()) throw ConnbenchInterrupted{};
    if (deadline.expired()) throw Error(Errc::timeout, "--timeout passed while sending");
    const Endpoint& destination = receivers.endpoint(d);
    for (std::size_t k = 0; k < burst; ++k) {
      std::memcpy(message.data(), &sequence[d], 8);
      ++sequence[d];
      socket.send(destination, message);
    }
  }
  socket.flush();
  result.messages = static_cast<std::uint64_t>(accesses.size()) * burst;
  while (receivers.received() < result.messages) {
    if (stop_requested()) throw ConnbenchInterrupted{};
    if (deadline.expired()) {
      throw Error(Errc::timeout, fmt::format("--timeout passed with {} of {} messages received", receivers.received(),
                                             result.messages));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  const auto end = std::chrono::steady_clock::now();
  result.seconds = std::chrono::duration<double>(end - start).count();
  result.msgs_per_s = static_cast<double>(result.messages) / result.seconds;
  result.connections = socket.connection_stats();
  result.out_of_order = receivers.out_of_order();
  socket.close_and_wait();  // throws what went wrong
  return result;
}

}  // namespace netio::tools
