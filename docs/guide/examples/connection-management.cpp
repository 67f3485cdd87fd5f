// SPDX-License-Identifier: MIT
// Connection management: one send socket to many receivers, at most 2 connections open.
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>
#include <netio/multi_destination_send_socket.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

int main() {
  using namespace std::chrono_literals;
  netio::Context workers_context;  // the receivers: workers, as if on other hosts
  std::atomic<int> received{0};
  std::vector<std::unique_ptr<netio::LowLatencyReceiveSocket>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(std::make_unique<netio::LowLatencyReceiveSocket>(
        workers_context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
        [&](std::span<const std::byte>, const netio::Peer&) { ++received; }));
  }

  netio::Context context;
  netio::MultiDestinationSendOptions options;
  options.mode = netio::SendMode::low_latency;      // or high_throughput
  options.max_connections = 2;                      // default 0: no limit
  options.policy = netio::ConnectionPolicy::lru_m;  // default lru
  options.low_latency.buffer_count = 16;            // each connection's own options
  options.on_peer_failed = [](const netio::Endpoint& peer, const netio::Error& e) {
    fmt::print(stderr, "{} failed: {}\n", peer.to_string(), e.what());
  };
  netio::MultiDestinationSendSocket sender(context, options);

  // Worker 0 is hot; the others come and go. Connections open on first use.
  for (int round = 0; round < 6; ++round) {
    for (int w : {0, 1 + round % 3}) {
      const std::byte request[8]{};
      sender.send(workers[w]->local_endpoint(), request);  // any thread
    }
  }
  sender.close_and_wait();  // everything out, every connection closed

  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (received < 12 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  const netio::ConnectionStats s = sender.connection_stats();
  fmt::print("received {}; opened {}, re-opened {}, torn down {}, peak open {}\n", received.load(), s.opened,
             s.reopened, s.torn_down, s.peak_open);
  return received == 12 && s.peak_open <= 2 ? 0 : 1;
}
