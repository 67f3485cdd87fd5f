// SPDX-License-Identifier: MIT
// The first bytes a stranger sends: the hello (handshake.hpp), the introduction
// (introduction.hpp) and the POSIX back-end's connect request and answer frames (wire.hpp).
// Whatever decodes must encode back to the same value; an introduction that decodes is
// within the documented limits (a printable name of 1-255 bytes, 512 bytes in all); what a
// receiver makes of a declared reply size is within its own limit; printable() makes any
// bytes printable.
#include "backends/posix/wire.hpp"
#include "handshake.hpp"
#include "introduction.hpp"

#include "fuzz_check.hpp"
#include "netio/backend/backend.hpp"
#include "netio/error.hpp"
#include "netio/printable.hpp"
#include "netio/socket_options.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
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
    FUZZ_CHECK(bytes.size() <= netio::detail::max_introduction_size);
    FUZZ_CHECK(!identity.name.empty() && identity.name.size() <= netio::detail::max_name_size);
    FUZZ_CHECK(netio::is_printable_utf8(identity.name));
    const auto again = netio::detail::decode_introduction(netio::detail::encode_introduction(identity));
    FUZZ_CHECK(again.name == identity.name);
    FUZZ_CHECK(again.endpoint.has_value() == identity.endpoint.has_value());
    FUZZ_CHECK(!again.endpoint || again.endpoint->to_string() == identity.endpoint->to_string());
  } catch (const netio::Error&) {
  }
  // The encoders return whole frames (length first); the decoders take the payload.
  const auto payload = [](const std::vector<std::byte>& frame) {
    return std::span<const std::byte>(frame).subspan(netio::posix::frame_header_size);
  };
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string shown = netio::printable(text);
  FUZZ_CHECK(netio::is_printable_utf8(shown));
  FUZZ_CHECK(text.find('\\') != std::string_view::npos || !netio::is_printable_utf8(text) || shown == text);
  if (const auto request = netio::posix::decode_request(bytes)) {
    auto decision = netio::AcceptDecision::accept(1024, 1);
    decision.max_reply_size = netio::AdmissionOptions{}.max_reply_size;
    const std::size_t replies = decision.reply_size_for(request->max_reply_size);
    FUZZ_CHECK(replies <= decision.max_reply_size && replies <= request->max_reply_size);
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
