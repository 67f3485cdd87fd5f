// SPDX-License-Identifier: MIT
// The first bytes a stranger sends: the hello (handshake.hpp), the introduction
// (introduction.hpp) and the POSIX back-end's connect request and answer frames (wire.hpp).
// Whatever decodes must encode back to the same value.
#include "backends/posix/wire.hpp"
#include "handshake.hpp"
#include "introduction.hpp"

#include "fuzz_check.hpp"
#include "netio/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const auto hello = netio::detail::decode_hello(bytes);
    const auto again = netio::detail::decode_hello(netio::detail::encode_hello(hello));
    FUZZ_CHECK(again.kind == hello.kind && again.buffer_size == hello.buffer_size && again.version == hello.version);
  } catch (const netio::Error&) {
  }
  try {
    netio::detail::expect_hello(bytes, netio::detail::SocketKind::high_throughput_send, "a fuzzing receiver");
  } catch (const netio::Error&) {
  }
  try {
    const auto identity = netio::detail::decode_introduction(bytes);
    FUZZ_CHECK(identity.name.size() <= netio::detail::max_name_size);
    const auto again = netio::detail::decode_introduction(netio::detail::encode_introduction(identity));
    // An empty name is sent as the sender's default name ("HOST:PID").
    FUZZ_CHECK(identity.name.empty() || again.name == identity.name);
    FUZZ_CHECK(again.endpoint.has_value() == identity.endpoint.has_value());
    FUZZ_CHECK(!again.endpoint || again.endpoint->to_string() == identity.endpoint->to_string());
  } catch (const netio::Error&) {
  }
  // The encoders return whole frames (length first); the decoders take the payload.
  const auto payload = [](const std::vector<std::byte>& frame) {
    return std::span<const std::byte>(frame).subspan(netio::posix::frame_header_size);
  };
  if (const auto request = netio::posix::decode_request(bytes)) {
    const auto again =
        netio::posix::decode_request(payload(netio::posix::encode_request(request->max_reply_size, request->hello)));
    FUZZ_CHECK(again && again->max_reply_size == request->max_reply_size && again->hello == request->hello);
  }
  if (const auto reply = netio::posix::decode_reply(bytes)) {
    const auto again = netio::posix::decode_reply(payload(netio::posix::encode_reply(*reply)));
    FUZZ_CHECK(again && again->accepted == reply->accepted && again->reason == reply->reason &&
               again->max_buffer_size == reply->max_buffer_size);
  }
  return 0;
}
