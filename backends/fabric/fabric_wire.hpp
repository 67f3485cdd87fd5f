// SPDX-License-Identifier: MIT
// What this back-end puts on the wire besides user buffers: the connection data carried by
// fi_connect / fi_accept / fi_reject, the messages a receiver sends back (credit messages and
// replies), and the remote CQ data that marks the sender's own messages to the receiver.
//
// Connection data (at most the provider's FI_OPT_CM_DATA_SIZE bytes; providers may pad what
// they deliver, so every payload carries its own length):
//   header          'N' 'F' version(1) kind
//   connect         u16 hello length, hello bytes                        (no replies taken)
//   connect+replies u16 hello length, hello bytes, u32 max reply size, u16 reply credits
//   accept          u64 max_buffer_size, u64 receive credits[, u8 length, accept data]
//                   (the accept data of AcceptDecision: a listener's challenge answer; a
//                   length of 0, or nothing, for none)
//   reject          u16 reason length, reason bytes (truncated to fit)
// A connect with replies costs 6 bytes more: on verbs (48 bytes) the hello may then take 36.
//
// Backward messages (receiver -> sender, on the same endpoint), each one message with a
// 16-byte header:
//   'N' 'F' 'C' 'R', u32 zero,           u64 data credits returned   a credit message
//   'N' 'F' 'R' 'P', u32 payload length, u64 data credits returned   a reply, payload follows
// "Data credits returned" is the running total of receive buffers the receiver re-posted
// since the connection started: idempotent, so replies carry it for free and credit messages
// merge freely.
//
// Forward control (sender -> receiver): user buffers travel as they are, never with a header.
// A sender that takes replies sends every message with remote CQ data (fi_senddata,
// fi_injectdata; 4 bytes, all that verbs carries), which the receiver sees through
// FI_REMOTE_CQ_DATA in the completion's flags:
//   bits 31..24  kind: 'D' a user buffer, 'C' a control message (no payload; not delivered)
//   bits 23..0   reply credits returned: the running total, modulo 2^24, of replies the
//                sender's user gave back (its receive re-posted)
// Windows stay far below 2^23, so the difference of two totals modulo 2^24 is exact.
// All integers little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netio::fabric::wire {

inline constexpr std::size_t header_size = 4;
inline constexpr std::size_t connect_overhead = header_size + 2;
inline constexpr std::size_t connect_replies_overhead = connect_overhead + 6;
inline constexpr std::size_t accept_size = header_size + 16;
// An accept carrying `extra` bytes of accept data (a length byte, then the bytes).
inline constexpr std::size_t accept_size_with(std::size_t extra) {
  return extra == 0 ? accept_size : accept_size + 1 + extra;
}
inline constexpr std::size_t reject_overhead = header_size + 2;
inline constexpr std::size_t backward_header_size = 16;
inline constexpr std::size_t credit_message_size = backward_header_size;
inline constexpr std::uint64_t max_reply_size = UINT32_MAX;
inline constexpr std::uint64_t max_reply_credits = UINT16_MAX;
inline constexpr std::uint32_t reply_credit_modulus = 1u << 24;

// What a sender takes as replies; zero max_size: none.
struct ReplyWindowData {
  std::uint64_t max_size = 0;
  std::uint64_t credits = 0;
};

struct ConnectData {
  std::vector<std::byte> hello;
  ReplyWindowData replies;
};

struct AcceptData {
  std::uint64_t max_buffer_size = 0;
  std::uint64_t receive_credits = 0;
  std::vector<std::byte> extra{};  // at most 255 bytes
};

// The reply window is carried only when window.max_size is not zero (then both fields must
// fit: max_size <= max_reply_size, 1 <= credits <= max_reply_credits).
std::vector<std::byte> encode_connect(std::span<const std::byte> hello, const ReplyWindowData& replies = {});
// Nullopt when `data` is not connect data of this back-end (or a window with zero credits).
std::optional<ConnectData> decode_connect(std::span<const std::byte> data);

// Throws netio::Error(Errc::message_too_large) for extra data beyond 255 bytes.
std::vector<std::byte> encode_accept(const AcceptData& accept);
std::optional<AcceptData> decode_accept(std::span<const std::byte> data);

// The reason is cut so that the whole encoding fits `limit` bytes.
std::vector<std::byte> encode_reject(std::string_view reason, std::size_t limit);
std::optional<std::string> decode_reject(std::span<const std::byte> data);

// Backward messages.
enum class BackwardKind : std::uint8_t { credits, reply };
struct BackwardHeader {
  BackwardKind kind = BackwardKind::credits;
  std::uint32_t payload_size = 0;
  std::uint64_t credits_returned = 0;
};
// Writes backward_header_size bytes.
void encode_backward_header(std::byte* out, const BackwardHeader& header) noexcept;
// `message` is a whole received message: nullopt unless it is a header of a known kind whose
// length matches exactly (a credit message has no payload).
std::optional<BackwardHeader> decode_backward(std::span<const std::byte> message) noexcept;

void encode_credits(std::byte* out, std::uint64_t total_returned) noexcept;
std::optional<std::uint64_t> decode_credits(std::span<const std::byte> data) noexcept;

// Forward remote CQ data.
enum class ForwardKind : std::uint8_t { data = 'D', control = 'C' };
struct ForwardData {
  ForwardKind kind = ForwardKind::data;
  std::uint32_t reply_credits_returned = 0;  // modulo reply_credit_modulus
};
std::uint64_t encode_forward_data(ForwardKind kind, std::uint64_t reply_credits_returned) noexcept;
std::optional<ForwardData> decode_forward_data(std::uint64_t data) noexcept;
// Credits returned between two totals modulo reply_credit_modulus.
constexpr std::uint32_t reply_credits_between(std::uint32_t before, std::uint32_t after) noexcept {
  return (after - before) & (reply_credit_modulus - 1);
}

}  // namespace netio::fabric::wire
