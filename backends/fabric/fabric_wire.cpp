// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_wire.hpp"

#include "netio/error.hpp"
#include "netio/internal/little_endian.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace netio::fabric::wire {
namespace {

constexpr std::byte magic0{'N'};
constexpr std::byte magic1{'F'};
constexpr std::byte version{1};
enum class Kind : std::uint8_t { connect = 1, accept = 2, reject = 3, connect_replies = 4 };

constexpr std::byte credit_magic[4] = {std::byte{'N'}, std::byte{'F'}, std::byte{'C'}, std::byte{'R'}};
constexpr std::byte reply_magic[4] = {std::byte{'N'}, std::byte{'F'}, std::byte{'R'}, std::byte{'P'}};

std::vector<std::byte> with_header(Kind kind, std::size_t payload) {
  std::vector<std::byte> out(header_size + payload);
  out[0] = magic0;
  out[1] = magic1;
  out[2] = version;
  out[3] = static_cast<std::byte>(kind);
  return out;
}

// The payload after a valid header of `kind`, or an empty optional.
std::optional<std::span<const std::byte>> payload_of(std::span<const std::byte> data, Kind kind) {
  if (data.size() < header_size || data[0] != magic0 || data[1] != magic1 || data[2] != version ||
      data[3] != static_cast<std::byte>(kind)) {
    return std::nullopt;
  }
  return data.subspan(header_size);
}

// A u16-length-prefixed byte string at the start of `payload`.
std::optional<std::span<const std::byte>> counted_bytes(std::span<const std::byte> payload) {
  if (payload.size() < 2) return std::nullopt;
  const auto length = detail::load_le<std::uint16_t>(payload.data());
  if (payload.size() - 2 < length) return std::nullopt;
  return payload.subspan(2, length);
}

}  // namespace

std::vector<std::byte> encode_connect(std::span<const std::byte> hello, const ReplyWindowData& replies) {
  const auto length = static_cast<std::uint16_t>(std::min<std::size_t>(hello.size(), UINT16_MAX));
  const bool with_replies = replies.max_size != 0;
  auto out = with_header(with_replies ? Kind::connect_replies : Kind::connect, 2 + length + (with_replies ? 6 : 0));
  std::byte* at = out.data() + header_size;
  detail::store_le<std::uint16_t>(at, length);
  if (length != 0) std::memcpy(at + 2, hello.data(), length);
  if (with_replies) {
    at += 2 + length;
    detail::store_le<std::uint32_t>(at, static_cast<std::uint32_t>(std::min(replies.max_size, max_reply_size)));
    detail::store_le<std::uint16_t>(at + 4, static_cast<std::uint16_t>(std::min(replies.credits, max_reply_credits)));
  }
  return out;
}

std::optional<ConnectData> decode_connect(std::span<const std::byte> data) {
  auto payload = payload_of(data, Kind::connect);
  const bool with_replies = !payload;
  if (with_replies) payload = payload_of(data, Kind::connect_replies);
  if (!payload) return std::nullopt;
  const auto hello = counted_bytes(*payload);
  if (!hello) return std::nullopt;
  ConnectData result{std::vector<std::byte>(hello->begin(), hello->end()), {}};
  if (with_replies) {
    const auto window = payload->subspan(2 + hello->size());
    if (window.size() < 6) return std::nullopt;
    result.replies.max_size = detail::load_le<std::uint32_t>(window.data());
    result.replies.credits = detail::load_le<std::uint16_t>(window.data() + 4);
    if (result.replies.max_size == 0 || result.replies.credits == 0) return std::nullopt;
  }
  return result;
}

std::vector<std::byte> encode_accept(const AcceptData& accept) {
  if (accept.extra.size() > UINT8_MAX) {
    throw Error(Errc::message_too_large, fmt::format("accept data of {} bytes; the fabric accept carries at most {}",
                                                     accept.extra.size(), UINT8_MAX));
  }
  auto out = with_header(Kind::accept, accept.extra.empty() ? 16 : 17 + accept.extra.size());
  detail::store_le<std::uint64_t>(out.data() + header_size, accept.max_buffer_size);
  detail::store_le<std::uint64_t>(out.data() + header_size + 8, accept.receive_credits);
  if (!accept.extra.empty()) {
    out[header_size + 16] = static_cast<std::byte>(accept.extra.size());
    std::memcpy(out.data() + header_size + 17, accept.extra.data(), accept.extra.size());
  }
  return out;
}

std::optional<AcceptData> decode_accept(std::span<const std::byte> data) {
  const auto payload = payload_of(data, Kind::accept);
  if (!payload || payload->size() < 16) return std::nullopt;
  AcceptData accept{
      detail::load_le<std::uint64_t>(payload->data()), detail::load_le<std::uint64_t>(payload->data() + 8), {}};
  if (payload->size() > 16) {
    const std::size_t length = static_cast<std::uint8_t>((*payload)[16]);
    if (payload->size() < 17 + length) return std::nullopt;
    accept.extra.assign(payload->begin() + 17, payload->begin() + 17 + static_cast<std::ptrdiff_t>(length));
  }
  return accept;
}

std::vector<std::byte> encode_reject(std::string_view reason, std::size_t limit) {
  const std::size_t room = limit > reject_overhead ? limit - reject_overhead : 0;
  const auto length = static_cast<std::uint16_t>(std::min({reason.size(), room, std::size_t{UINT16_MAX}}));
  auto out = with_header(Kind::reject, 2 + length);
  detail::store_le<std::uint16_t>(out.data() + header_size, length);
  if (length != 0) std::memcpy(out.data() + header_size + 2, reason.data(), length);
  return out;
}

std::optional<std::string> decode_reject(std::span<const std::byte> data) {
  const auto payload = payload_of(data, Kind::reject);
  if (!payload) return std::nullopt;
  const auto reason = counted_bytes(*payload);
  if (!reason) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(reason->data()), reason->size());
}

void encode_backward_header(std::byte* out, const BackwardHeader& header) noexcept {
  std::memcpy(out, header.kind == BackwardKind::reply ? reply_magic : credit_magic, 4);
  detail::store_le<std::uint32_t>(out + 4, header.kind == BackwardKind::reply ? header.payload_size : 0);
  detail::store_le<std::uint64_t>(out + 8, header.credits_returned);
}

std::optional<BackwardHeader> decode_backward(std::span<const std::byte> message) noexcept {
  if (message.size() < backward_header_size) return std::nullopt;
  BackwardHeader header;
  if (std::memcmp(message.data(), credit_magic, 4) == 0) {
    header.kind = BackwardKind::credits;
  } else if (std::memcmp(message.data(), reply_magic, 4) == 0) {
    header.kind = BackwardKind::reply;
  } else {
    return std::nullopt;
  }
  header.payload_size = detail::load_le<std::uint32_t>(message.data() + 4);
  header.credits_returned = detail::load_le<std::uint64_t>(message.data() + 8);
  if (header.kind == BackwardKind::credits && header.payload_size != 0) return std::nullopt;
  if (message.size() - backward_header_size != header.payload_size) return std::nullopt;
  return header;
}

void encode_credits(std::byte* out, std::uint64_t total_returned) noexcept {
  encode_backward_header(out, {BackwardKind::credits, 0, total_returned});
}

std::optional<std::uint64_t> decode_credits(std::span<const std::byte> data) noexcept {
  const auto header = decode_backward(data);
  if (!header || header->kind != BackwardKind::credits) return std::nullopt;
  return header->credits_returned;
}

std::uint64_t encode_forward_data(ForwardKind kind, std::uint64_t reply_credits_returned) noexcept {
  return (std::uint64_t{static_cast<std::uint8_t>(kind)} << 24) | (reply_credits_returned & (reply_credit_modulus - 1));
}

std::optional<ForwardData> decode_forward_data(std::uint64_t data) noexcept {
  if (data >> 32 != 0) return std::nullopt;
  const auto kind = static_cast<std::uint8_t>(data >> 24);
  if (kind != static_cast<std::uint8_t>(ForwardKind::data) && kind != static_cast<std::uint8_t>(ForwardKind::control)) {
    return std::nullopt;
  }
  return ForwardData{static_cast<ForwardKind>(kind), static_cast<std::uint32_t>(data & (reply_credit_modulus - 1))};
}

}  // namespace netio::fabric::wire
