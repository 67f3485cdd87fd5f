// SPDX-License-Identifier: MIT
// The emulated network: loopback with a 2 ms delay on every send, then a new spec while running.
#include <netio/context.hpp>
#include <netio/emulation.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <chrono>

int main() {
  using namespace std::chrono_literals;
  netio::ContextOptions options;
  options.emulation = netio::parse_emulation_spec("delay=2ms");  // every back-end of the context
  netio::Context context(options);

  netio::LowLatencyReceiveSocket echo(context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
                                      [](std::span<const std::byte> m, const netio::Peer& peer) { peer.try_reply(m); });
  netio::LowLatencySendSocket client(context, echo.local_endpoint());
  if (!client.wait_connected(5s)) return 1;

  const auto round_trip = [&] {
    const std::byte ping[8]{};
    const auto start = std::chrono::steady_clock::now();
    client.send(ping);
    if (!client.recv_reply(5s)) throw netio::Error(netio::Errc::timeout, "no reply");
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  };
  const double delayed = round_trip();  // the request and the reply each wait 2 ms

  // From any thread, while running: later buffers use the new draws and rates.
  context.emulation()->set_spec("delay=uniform:min=0us,max=100us;rate=1Gbps");
  const double faster = round_trip();
  fmt::print("round trip: {:.0f} us with delay=2ms, {:.0f} us after set_spec\n", delayed, faster);
  fmt::print("buffers delayed: {}\n", context.emulation()->counters().buffers_delayed);

  try {  // a bad spec is refused, quoting it and saying what is wrong
    netio::parse_emulation_spec("delay=lognormal:mean=50us");
  } catch (const netio::Error& e) {
    fmt::print("{}\n", e.what());
  }
  return delayed >= 4000 ? 0 : 1;
}
