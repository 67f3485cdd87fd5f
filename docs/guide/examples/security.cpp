// SPDX-License-Identifier: MIT
// Security: an allow-list, admission limits, and a pre-shared key.
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <chrono>
#include <string>

int main() {
  using namespace std::chrono_literals;
  netio::Context context;
  const auto local = netio::Endpoint::parse("tcp://127.0.0.1:0");
  const auto ignore = [](std::span<const std::byte>, const netio::Peer&) {};

  // Loopback only, at most 16 peers, 2 s to finish a handshake; a key when this build has libsodium.
  netio::LowLatencyReceiveOptions options;
  options.admission.allow = netio::parse_peer_networks("127.0.0.0/8,::1");
  options.admission.max_connections = 16;
  options.admission.handshake_timeout = 2s;
  if (netio::PreSharedKey::supported()) {
    // In production: netio::PreSharedKey::from_file("/etc/daq/netio.key"), a file of mode 600.
    options.admission.key = netio::PreSharedKey::from_hex(std::string(64, 'a'), "the example's key");
  }
  netio::LowLatencyReceiveSocket receiver(context, local, ignore, options);

  netio::LowLatencySendOptions send_options;
  send_options.key = options.admission.key;  // the same key on both sides
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), send_options);
  if (!sender.wait_connected(5s)) return 1;
  fmt::print("admitted\n");

  // A listener that allows 10.0.0.0/8 only turns a loopback peer away, saying why.
  netio::LowLatencyReceiveOptions strict;
  strict.admission.allow = netio::parse_peer_networks("10.0.0.0/8");
  netio::LowLatencyReceiveSocket closed(context, local, ignore, strict);
  netio::LowLatencySendSocket outsider(context, closed.local_endpoint());
  bool rejected = false;
  try {
    if (!outsider.wait_connected(5s)) fmt::print("no answer within 5 s\n");
  } catch (const netio::Error& e) {
    fmt::print("rejected: {}\n", e.what());
    rejected = e.code() == netio::Errc::handshake_rejected;
  }

  // Malformed values are refused with the value and the reason.
  try {
    netio::parse_peer_networks("10.0.0.0/33");
  } catch (const netio::Error& e) {
    fmt::print("{}\n", e.what());
  }
  return rejected ? 0 : 1;
}
