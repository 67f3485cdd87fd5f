// SPDX-License-Identifier: MIT
// shm://: processes of one node, connected over abstract Unix-domain sockets.
#include <netio/backend/registry.hpp>
#include <netio/backends/shm.hpp>
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <string_view>
#include <thread>

int main() {
  using namespace std::chrono_literals;
  // Trust user 1001 as well as our own (both ways: as a sender and as a listener), under a
  // scheme of its own. Registered before a Context first uses the scheme.
  netio::register_backend("shm-daq", netio::shm_backend_factory({{1001}, {}}));

  netio::Context context;
  std::atomic<int> received{0};
  // Port 0: the listener picks a free one; local_endpoint() says which.
  netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse("shm://readout:0"),
                                          [&](std::span<const std::byte> message, const netio::Peer& peer) {
                                            fmt::print("{} bytes from {} ({})\n", message.size(), peer.name(),
                                                       peer.address().to_string());
                                            ++received;
                                          });
  fmt::print("listening on {}\n", receiver.local_endpoint().to_string());

  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  if (!sender.wait_connected(10s)) return 1;
  constexpr std::string_view text = "one node, no TCP/IP";
  sender.send(std::as_bytes(std::span(text)));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (received == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  return received == 1 ? 0 : 1;
}
