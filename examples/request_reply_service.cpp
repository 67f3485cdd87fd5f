// SPDX-License-Identifier: MIT
// A request/reply service: one receive socket serves any number of clients, each on its own
// connection, and answers every request on the connection it came on (a reply). The
// handler sees who asked (netio::Peer: the name the client declared, its connection id).
//
//   ./request_reply_service                 tcp://127.0.0.1 on a free port
//   ./request_reply_service fabric://127.0.0.1:0?provider=tcp
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

std::string_view as_text(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  constexpr int clients = 3;
  constexpr int requests = 4;
  try {
    netio::Context context;  // one event-loop thread

    // The service: upper-cases each request and sends it back to whoever asked. The handler
    // runs on the event-loop thread, so it answers with try_reply(), which never waits: it
    // says false when that client is not taking its answers (then we drop the request).
    netio::LowLatencyReceiveOptions service_options;
    service_options.events.on_connected = [](const netio::Peer& peer) {
      fmt::print("service: {} connected (connection {})\n", peer.name(), peer.connection());
    };
    netio::LowLatencyReceiveSocket service(
        context, netio::Endpoint::parse(argc > 1 ? argv[1] : "tcp://127.0.0.1:0"),
        [](std::span<const std::byte> request, const netio::Peer& peer) {
          std::string answer(as_text(request));
          std::transform(answer.begin(), answer.end(), answer.begin(), [](unsigned char c) { return std::toupper(c); });
          if (!peer.try_reply(std::as_bytes(std::span(answer)))) {
            fmt::print(stderr, "service: {} is not taking its answers; dropped a request\n", peer.name());
          }
        },
        service_options);
    fmt::print("service listening on {}\n", service.local_endpoint().to_string());

    // The clients, each on a thread of its own: send a request, wait for its answer.
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        netio::LowLatencySendOptions options;
        options.identity.name = fmt::format("client-{}", c);
        netio::LowLatencySendSocket client(context, service.local_endpoint(), options);
        // False on timeout (it keeps trying); throws netio::Error if rejected.
        if (!client.wait_connected(5s)) throw netio::Error(netio::Errc::timeout, "no connection within 5 s");
        for (int r = 0; r < requests; ++r) {
          const auto request = fmt::format("request {} from client {}", r, c);
          client.send(std::as_bytes(std::span(request)));
          const auto answer = client.recv_reply(5s);  // replies come back in order
          std::string expected = request;
          std::transform(expected.begin(), expected.end(), expected.begin(),
                         [](unsigned char ch) { return std::toupper(ch); });
          if (!answer || as_text(answer->bytes()) != expected) {
            ++wrong;
            continue;
          }
          fmt::print("client-{}: {}\n", c, as_text(answer->bytes()));
        }
      });
    }
    for (auto& t : threads) t.join();
    if (wrong != 0) {
      fmt::print(stderr, "error: {} answers missing or wrong\n", wrong.load());
      return 1;
    }
    return 0;
  } catch (const netio::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
