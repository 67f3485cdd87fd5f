// SPDX-License-Identifier: MIT
// Endpoints, the back-end registry, a back-end decorator, and one program over every transport.
#include <netio/backend/registry.hpp>
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

int main() {
  using namespace std::chrono_literals;
  const auto ib = netio::Endpoint::parse("fabric://10.10.0.2:5000?provider=verbs");
  fmt::print("{}: scheme {}, host {}, port {}, provider {}\n", ib.to_string(), ib.scheme, ib.host, ib.port,
             ib.option("provider"));
  try {
    netio::Endpoint::parse("tcp://node07");
  } catch (const netio::Error& e) {
    fmt::print("{} ({})\n", e.what(), e.code() == netio::Errc::malformed_endpoint);
  }

  // A back-end of your own is registered by scheme (here: the TCP back-end under another
  // name); from then on Endpoint::parse() takes "my-tcp://HOST:PORT".
  netio::register_backend("my-tcp",
                          [](netio::EventLoop& loop) { return netio::make_registered_backend("tcp", loop, "my-tcp"); });
  const auto schemes = netio::registered_backend_schemes();
  fmt::print("registered back-ends: {}\n", fmt::join(schemes, ", "));

  // A decorator sees every back-end the context makes (the emulated network is one).
  std::atomic<int> wrapped{0};
  netio::ContextOptions options;
  options.wrap_backend = [&](std::string_view, std::unique_ptr<netio::Backend> inner, netio::EventLoop&) {
    ++wrapped;
    return inner;
  };
  netio::Context context(options);

  // The same code over each back-end: made on first use, on the loop thread.
  std::vector<std::string> bases{"tcp://127.0.0.1:0", "my-tcp://127.0.0.1:0"};
  if (std::ranges::find(schemes, "fabric") != schemes.end()) bases.push_back("fabric://127.0.0.1:0?provider=tcp");
  for (const auto& base : bases) {
    std::atomic<int> received{0};
    netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse(base),
                                            [&](std::span<const std::byte>, const netio::Peer&) { ++received; });
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
    if (!sender.wait_connected(10s)) return 1;
    sender.send(std::as_bytes(std::span(base)));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (received == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    fmt::print("{}: {}\n", receiver.local_endpoint().to_string(), received == 1 ? "ok" : "nothing arrived");
    if (received != 1) return 1;
  }
  return wrapped == static_cast<int>(bases.size()) ? 0 : 1;
}
