// SPDX-License-Identifier: MIT
// Getting started: a receive socket and a send socket in one process, over loopback TCP.
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <span>
#include <string>
#include <thread>

int main() {
  using namespace std::chrono_literals;
  try {
    netio::Context context;  // one event-loop thread; every socket is made from a context
    std::atomic<int> received{0};

    // The handler runs on the event-loop thread; the bytes are valid during the call only.
    netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
                                            [&](std::span<const std::byte> message, const netio::Peer& peer) {
                                              fmt::print("{} bytes from {}\n", message.size(), peer.to_string());
                                              ++received;
                                            });

    // Port 0 picked a free port; local_endpoint() says which.
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
    if (!sender.wait_connected(5s)) return 1;  // false on timeout (it keeps trying); throws when rejected
    for (int i = 0; i < 3; ++i) {
      const std::string text = "hello #" + std::to_string(i);
      sender.send(std::as_bytes(std::span(text)));  // copied: text may go at once
    }

    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (received < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    return received == 3 ? 0 : 1;
  } catch (const netio::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
