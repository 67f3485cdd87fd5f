// SPDX-License-Identifier: MIT
// Large frames on the POSIX back-end: while the rest of a frame is awaited the receiver asks
// the kernel to report the socket only once that rest is in (SO_RCVLOWAT, frame_reader.hpp).
// These tests drive a receive socket from a raw TCP peer, so that the frames arrive in the
// parts and at the moments the test chooses, and check that nothing is left unreported:
// a frame that comes in parts is delivered when its last byte is in, and bytes that the
// reader left in the kernel (its read budget ran out) are read although the mark it had set
// for an earlier frame was higher.
#include "backends/posix/wire.hpp"
#include "netio/context.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/admission_peers.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;
using netio::test::pattern;
using netio::test::RawConnection;

namespace {

constexpr std::size_t large_frame = 3 * 1024 * 1024;

// A low-latency receive socket that checks message i against pattern(size_i, i).
struct CheckingReceiver {
  explicit CheckingReceiver(std::vector<std::size_t> message_sizes)
      : sizes(std::move(message_sizes)),
        context(netio::test::context_options()),
        socket(context, Endpoint::parse("tcp://127.0.0.1:0"), handler(), options()) {}

  netio::LowLatencyReceiveSocket::Handler handler() {
    return [this](std::span<const std::byte> message, const netio::Peer&) {
      const std::size_t i = received.load();
      const bool expected = i < sizes.size() && message.size() == sizes[i] &&
                            std::memcmp(message.data(), pattern(sizes[i], i).data(), sizes[i]) == 0;
      if (!expected) ++wrong;
      received.store(i + 1);
    };
  }
  static netio::LowLatencyReceiveOptions options() {
    netio::LowLatencyReceiveOptions o;
    o.max_message_size = 4 * 1024 * 1024;
    return o;
  }

  std::vector<std::size_t> sizes;
  std::atomic<std::size_t> received{0}, wrong{0};
  netio::Context context;
  netio::LowLatencyReceiveSocket socket;
};

// A raw TCP peer past the handshake and introduction: what it sends next are data frames.
std::unique_ptr<RawConnection> connect_raw(CheckingReceiver& receiver) {
  auto peer = std::make_unique<RawConnection>(receiver.socket.local_endpoint().port);
  peer->introduce("raw");
  return peer;
}

// The frames of messages [0, sizes.size()) one after the other.
std::vector<std::byte> frames(const std::vector<std::size_t>& sizes) {
  std::vector<std::byte> bytes;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto frame = netio::posix::encode_frame(pattern(sizes[i], i));
    bytes.insert(bytes.end(), frame.begin(), frame.end());
  }
  return bytes;
}

}  // namespace

TEST_CASE("posix: a large frame that arrives in parts is delivered once its last byte is in", "[posix][integration]") {
  CheckingReceiver receiver({large_frame, 100});
  const auto peer = connect_raw(receiver);
  const auto bytes = frames(receiver.sizes);
  const std::span<const std::byte> all(bytes);
  const std::size_t first_end = netio::posix::frame_header_size + large_frame;
  // Header and a little, then the rest in parts with pauses: the receiver waits for the rest
  // in between, and must neither wait for more than the frame's rest nor miss its last byte.
  const std::size_t cuts[] = {0,           netio::posix::frame_header_size + 10, 1024 * 1024, first_end - 1, first_end,
                              bytes.size()};
  for (std::size_t i = 0; i + 1 < std::size(cuts); ++i) {
    peer->send_bytes(all.subspan(cuts[i], cuts[i + 1] - cuts[i]));
    std::this_thread::sleep_for(50ms);
    if (cuts[i + 1] < first_end) CHECK(receiver.received == 0);
    // Its last byte alone completes it: nothing after it is needed to wake the reader.
    if (cuts[i + 1] == first_end) REQUIRE(eventually([&] { return receiver.received == 1; }, 5s));
  }
  REQUIRE(eventually([&] { return receiver.received == 2; }, 5s));
  CHECK(receiver.wrong == 0);
}

TEST_CASE(
    "posix: frames left in the kernel when the reader's budget ran out are read, "
    "though a large frame before them had raised the mark",
    "[posix][integration]") {
  // A 3 MiB frame begun and awaited (the mark is its rest), then its rest and 20 frames of
  // 60 KiB in one go: the reader stops after 16 reads with some of those in the kernel, fewer
  // bytes than the first frame's rest. Unless the mark comes down, nothing reports them
  // until the progress timeout (30 s) reads them.
  std::vector<std::size_t> sizes{large_frame};
  sizes.insert(sizes.end(), 20, 60 * 1024);
  CheckingReceiver receiver(sizes);
  const auto peer = connect_raw(receiver);
  const auto bytes = frames(receiver.sizes);
  const std::span<const std::byte> all(bytes);
  const std::size_t begun = netio::posix::frame_header_size + 10;
  peer->send_bytes(all.first(begun));
  std::this_thread::sleep_for(100ms);
  peer->send_bytes(all.subspan(begun));
  REQUIRE(eventually([&] { return receiver.received == sizes.size(); }, 5s));
  CHECK(receiver.wrong == 0);
}
