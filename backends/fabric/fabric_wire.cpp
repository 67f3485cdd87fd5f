#include "backends/fabric/fabric_wire.hpp"

#include "little_endian.hpp"

#include <algorithm>
#include <cstring>

namespace netio::fabric::wire {
namespace {

constexpr std::byte magic0{'N'};
constexpr std::byte magic1{'F'};
constexpr std::byte version{1};
enum class Kind : std::uint8_t { connect = 1, accept = 2, reject = 3 };

constexpr std::byte credit_magic[4] = {std::byte{'N'}, std::byte{'F'}, std::byte{'C'}, std::byte{'R'}};

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

std::vector<std::byte> encode_connect(std::span<const std::byte> hello) {
  const auto length = static_cast<std::uint16_t>(std::min<std::size_t>(hello.size(), UINT16_MAX));
  auto out = with_header(Kind::connect, 2 + length);
  detail::store_le<std::uint16_t>(out.data() + header_size, length);
  if (length != 0) std::memcpy(out.data() + header_size + 2, hello.data(), length);
  return out;
}

std::optional<std::vector<std::byte>> decode_connect(std::span<const std::byte> data) {
  const auto payload = payload_of(data, Kind::connect);
  if (!payload) return std::nullopt;
  const auto hello = counted_bytes(*payload);
  if (!hello) return std::nullopt;
  return std::vector<std::byte>(hello->begin(), hello->end());
}

std::vector<std::byte> encode_accept(const AcceptData& accept) {
  auto out = with_header(Kind::accept, 16);
  detail::store_le<std::uint64_t>(out.data() + header_size, accept.max_buffer_size);
  detail::store_le<std::uint64_t>(out.data() + header_size + 8, accept.receive_credits);
  return out;
}

std::optional<AcceptData> decode_accept(std::span<const std::byte> data) {
  const auto payload = payload_of(data, Kind::accept);
  if (!payload || payload->size() < 16) return std::nullopt;
  return AcceptData{detail::load_le<std::uint64_t>(payload->data()), detail::load_le<std::uint64_t>(payload->data() + 8)};
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

void encode_credits(std::byte* out, std::uint64_t total_returned) noexcept {
  std::memcpy(out, credit_magic, sizeof credit_magic);
  detail::store_le<std::uint32_t>(out + 4, 0);
  detail::store_le<std::uint64_t>(out + 8, total_returned);
}

std::optional<std::uint64_t> decode_credits(std::span<const std::byte> data) noexcept {
  if (data.size() != credit_message_size || std::memcmp(data.data(), credit_magic, sizeof credit_magic) != 0) {
    return std::nullopt;
  }
  return detail::load_le<std::uint64_t>(data.data() + 8);
}

}  // namespace netio::fabric::wire
