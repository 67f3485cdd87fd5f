// SPDX-License-Identifier: MIT
// Faults of peers that the receiving side must count and report exactly once.
#include "handshake.hpp"
#include "introduction.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"
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
  netio::LowLatencyReceiveSocket receiver(
      context, base, [](std::span<const std::byte>, const netio::Peer&) {}, options);

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

namespace {

// Registers buffers of up to 4 KiB and refuses larger ones, as a fabric provider out of
// registrable memory would.
class SmallBuffersOnly final : public netio::MemoryRegistrar {
 public:
  void register_buffer(netio::Buffer& buffer) override {
    if (buffer.capacity > 4096) throw netio::Error(netio::Errc::backend_error, "cannot register more than 4 KiB");
  }
  void deregister_buffer(netio::Buffer&) noexcept override {}
};

class RefusingSendSocket final : public netio::LowLevelSendSocket {
 public:
  explicit RefusingSendSocket(std::unique_ptr<netio::LowLevelSendSocket> inner) : inner_(std::move(inner)) {}
  void accept_replies(netio::ReplyWindow window) override { inner_->accept_replies(window); }
  void connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) override {
    inner_->connect(remote, hello, std::move(callbacks));
  }
  void send(netio::Buffer* buffer) override { inner_->send(buffer); }
  netio::MemoryRegistrar* registrar() noexcept override { return &registrar_; }
  bool sends_unregistered_memory() const noexcept override { return inner_->sends_unregistered_memory(); }
  std::size_t efficient_buffer_size() const noexcept override { return inner_->efficient_buffer_size(); }
  void close() noexcept override { inner_->close(); }

 private:
  std::unique_ptr<netio::LowLevelSendSocket> inner_;
  SmallBuffersOnly registrar_;
};

class RefusingBackend final : public netio::Backend {
 public:
  explicit RefusingBackend(std::unique_ptr<netio::Backend> inner) : inner_(std::move(inner)) {}
  std::unique_ptr<netio::LowLevelSendSocket> make_send_socket() override {
    return std::make_unique<RefusingSendSocket>(inner_->make_send_socket());
  }
  std::unique_ptr<netio::LowLevelListenSocket> make_listen_socket() override { return inner_->make_listen_socket(); }

 private:
  std::unique_ptr<netio::Backend> inner_;
};

}  // namespace

TEST_CASE("a send buffer that cannot grow for a message goes back to the pool", "[faults][low_latency]") {
  netio::Context receiving(netio::test::context_options());
  std::atomic<int> received{0};
  netio::LowLatencyReceiveSocket receiver(receiving, Endpoint::parse("tcp://127.0.0.1:0"),
                                          [&](std::span<const std::byte>, const netio::Peer&) { ++received; });
  netio::ContextOptions options;
  options.wrap_backend = [](std::string_view, std::unique_ptr<netio::Backend> inner, netio::EventLoop&) {
    return std::make_unique<RefusingBackend>(std::move(inner));
  };
  netio::Context sending(options);
  netio::LowLatencySendOptions send_options;
  send_options.buffer_count = 2;
  send_options.buffer_size = 1024;
  netio::LowLatencySendSocket sender(sending, receiver.local_endpoint(), send_options);
  REQUIRE(sender.wait_connected(10s));

  const std::vector<std::byte> large(8192, std::byte{1});
  for (int i = 0; i < 4; ++i) CHECK_THROWS_AS(sender.try_send(large), netio::Error);  // more tries than buffers
  // Both buffers are still there for messages that fit.
  const std::vector<std::byte> small(64, std::byte{2});
  CHECK(sender.try_send(small));
  CHECK(sender.try_send(small));
  REQUIRE(eventually([&] { return received.load() == 2; }));
}
