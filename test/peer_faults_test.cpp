// Faults of peers that the receiving side must count and report exactly once.
#include "netio/context.hpp"
#include "netio/low_latency_socket.hpp"
#include "handshake.hpp"
#include "introduction.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;

TEST_CASE("a peer dropped for a protocol error that also closed is reported disconnected once",
          "[faults][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  std::atomic<int> connected{0}, disconnected{0};
  netio::LowLatencyReceiveOptions options;
  options.max_message_size = 100;
  options.events.on_connected = [&](const netio::Peer&) { ++connected; };
  options.events.on_disconnected = [&](const netio::Peer&, const netio::Error&) { ++disconnected; };
  netio::LowLatencyReceiveSocket receiver(context, base, [](std::span<const std::byte>, const netio::Peer&) {}, options);

  // The misbehaving peer lives in a context of its own, so that it can send and leave
  // while the receiver's loop is held: the receiver then finds the oversized message and
  // the end of the connection in one read, and drops a peer that is already gone.
  netio::Context peer_context(netio::test::context_options());
  std::unique_ptr<netio::LowLevelSendSocket> peer;
  const auto introduction = netio::detail::encode_introduction({"misbehaving", std::nullopt});
  std::vector<std::byte> oversized(300, std::byte{0x33});  // over 100, within the 512 allowed per frame
  netio::Buffer intro_buffer{const_cast<std::byte*>(introduction.data()), introduction.size(), introduction.size()};
  netio::Buffer oversized_buffer{oversized.data(), oversized.size(), oversized.size()};
  std::atomic<bool> up{false};
  std::atomic<int> completed{0};
  peer_context.loop().run_sync([&] {
    peer = peer_context.backend(receiver.local_endpoint()).make_send_socket();
    netio::LowLevelSendSocket::Callbacks callbacks;
    callbacks.on_connected = [&](const netio::ConnectionInfo&) {
      peer->send(&intro_buffer);
      up = true;
    };
    callbacks.on_send_completed = [&](netio::Buffer*) { ++completed; };
    const auto hello = netio::detail::encode_hello({netio::detail::SocketKind::low_latency_send, 0});
    peer->connect(receiver.local_endpoint(), hello, std::move(callbacks));
  });
  REQUIRE(eventually([&] { return connected.load() == 1 && completed.load() == 1; }));

  std::atomic<bool> release{false};
  context.loop().post([&] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  peer_context.loop().run_sync([&] { peer->send(&oversized_buffer); });
  REQUIRE(eventually([&] { return completed.load() == 2; }));
  peer_context.loop().run_sync([&] {
    peer->close();
    peer.reset();
  });
  std::this_thread::sleep_for(100ms);  // the end of the connection reaches the receiver's kernel
  release = true;

  REQUIRE(eventually([&] { return disconnected.load() >= 1; }));
  context.loop().run_sync([] {});  // what the drop and the end of file posted has run
  context.loop().run_sync([] {});
  CHECK(disconnected == 1);
  CHECK(receiver.stats().disconnects == 1);
}
