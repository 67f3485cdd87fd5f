// SPDX-License-Identifier: MIT
// The libfabric back-end's own wire (backends/fabric/fabric_wire.hpp): the connection
// request and answer data a stranger puts in fi_connect / fi_accept / fi_reject, and the
// headers of backward messages (credits, replies). What decodes must encode back the same.
#include "backends/fabric/fabric_wire.hpp"

#include "fuzz_check.hpp"
#include "netio/backend/backend.hpp"
#include "netio/socket_options.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace f = netio::fabric::wire;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  if (const auto connect = f::decode_connect(bytes)) {
    const auto again = f::decode_connect(f::encode_connect(connect->hello, connect->replies));
    FUZZ_CHECK(again && again->hello == connect->hello);
    FUZZ_CHECK(again->replies.max_size == connect->replies.max_size &&
               again->replies.credits == connect->replies.credits);
    // What the receiver makes of the declared replies: never beyond its own limit.
    auto decision = netio::AcceptDecision::accept(1024, 1);
    decision.max_reply_size = netio::AdmissionOptions{}.max_reply_size;
    const std::size_t replies = decision.reply_size_for(connect->replies.max_size);
    FUZZ_CHECK(replies <= decision.max_reply_size && replies <= connect->replies.max_size);
  }
  if (const auto accept = f::decode_accept(bytes)) {
    const auto again = f::decode_accept(f::encode_accept(*accept));
    FUZZ_CHECK(again && again->max_buffer_size == accept->max_buffer_size &&
               again->receive_credits == accept->receive_credits);
  }
  if (const auto reason = f::decode_reject(bytes)) {
    const auto again = f::decode_reject(f::encode_reject(*reason, 1 << 16));
    FUZZ_CHECK(again && *again == *reason);
  }
  if (const auto header = f::decode_backward(bytes)) {
    FUZZ_CHECK(size >= f::backward_header_size);
    FUZZ_CHECK(header->kind != f::BackwardKind::credits || header->payload_size == 0);
  }
  f::decode_credits(bytes);
  if (size >= sizeof(std::uint64_t)) {
    std::uint64_t word = 0;
    std::memcpy(&word, data, sizeof word);
    if (const auto forward = f::decode_forward_data(word)) {
      FUZZ_CHECK(
          f::decode_forward_data(f::encode_forward_data(forward->kind, forward->reply_credits_returned)).has_value());
    }
  }
  return 0;
}
