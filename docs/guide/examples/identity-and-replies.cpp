// SPDX-License-Identifier: MIT
// Identity and replies: a service that answers each request on the connection it came on.
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <chrono>
#include <span>
#include <string>
#include <string_view>

int main() {
  using namespace std::chrono_literals;
  netio::Context context;

  netio::LowLatencyReceiveOptions service_options;
  service_options.events.on_connected = [](const netio::Peer& peer) {
    fmt::print("connected: {} (connection {})\n", peer.to_string(), peer.connection());
  };
  netio::LowLatencyReceiveSocket service(
      context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
      [](std::span<const std::byte> request, const netio::Peer& peer) {
        // Never waits; false when this peer's reply window is full (it is not taking replies).
        if (!peer.try_reply(request)) fmt::print(stderr, "{} is not taking its replies\n", peer.name());
      },
      service_options);

  netio::LowLatencySendOptions options;
  options.identity.name = "calibration-3";  // default "HOST:PID"
  options.replies.max_size = 1024;          // larger replies are refused at the replier (default 4 KiB)
  netio::LowLatencySendSocket client(context, service.local_endpoint(), options);

  for (int i = 0; i < 3; ++i) {
    const std::string request = "request #" + std::to_string(i);
    client.send(std::as_bytes(std::span(request)));
    std::optional<netio::Message> answer = client.recv_reply(5s);  // std::nullopt on timeout
    if (!answer) return 1;
    const std::string_view text(reinterpret_cast<const char*>(answer->data()), answer->size());
    fmt::print("answer: {}\n", text);
    if (text != request) return 1;
  }
  return 0;
}
