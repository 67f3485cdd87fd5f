// SPDX-License-Identifier: MIT
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <atomic>
#include <chrono>
#include <thread>

int main() {
  netio::Context context;
  std::atomic<bool> got{false};
  netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
                                          [&](std::span<const std::byte>, const netio::Peer&) { got = true; });
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  const char text[] = "installed";
  sender.send(std::as_bytes(std::span(text)));
  for (int i = 0; i < 5000 && !got; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return got ? 0 : 1;
}
