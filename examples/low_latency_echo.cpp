// SPDX-License-Identifier: MIT
// Low-latency sockets in one process: a receiver that prints what arrives, and a sender.
// Connections are one-directional (send socket -> receive socket), as in NetIO.
//
//   ./low_latency_echo                 uses tcp://127.0.0.1 on a free port
//   ./low_latency_echo fabric://127.0.0.1:0?provider=tcp
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <string_view>
#include <thread>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  try {
    netio::Context context;  // one event-loop thread
    std::atomic<int> received{0};
    // The handler runs on the event-loop thread; the view is valid during the call only.
    netio::LowLatencyReceiveSocket receiver(
        context, netio::Endpoint::parse(argc > 1 ? argv[1] : "tcp://127.0.0.1:0"),
        [&](std::span<const std::byte> message, const netio::Peer& peer) {
          fmt::print("from {}: {}\n", peer.to_string(),
                     std::string_view(reinterpret_cast<const char*>(message.data()), message.size()));
          ++received;
        });
    fmt::print("listening on {}\n", receiver.local_endpoint().to_string());

    netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
    if (!sender.wait_connected(5s)) {  // false on timeout (it keeps trying); throws netio::Error if rejected
      fmt::print(stderr, "no connection within 5 s\n");
      return 1;
    }
    for (int i = 0; i < 3; ++i) {
      const auto text = fmt::format("hello #{}", i);
      sender.send(std::as_bytes(std::span(text)));  // copied: the string may go at once
    }
    while (received < 3) std::this_thread::sleep_for(1ms);
    return 0;
  } catch (const netio::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
