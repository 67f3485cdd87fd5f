// What this back-end puts on the wire besides user buffers: the connection data carried by
// fi_connect / fi_accept / fi_reject, and the credit messages a receiver sends back.
//
// Connection data (at most the provider's FI_OPT_CM_DATA_SIZE bytes; providers may pad what
// they deliver, so every payload carries its own length):
//   header   'N' 'F' version(1) kind
//   connect  u16 hello length, hello bytes
//   accept   u64 max_buffer_size, u64 receive credits
//   reject   u16 reason length, reason bytes (truncated to fit)
// Credit message (receiver -> sender, on the same endpoint):
//   'N' 'F' 'C' 'R', u32 zero, u64 credits returned since the connection started
// The running total makes messages idempotent and lets the receiver merge them freely.
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
inline constexpr std::size_t accept_size = header_size + 16;
inline constexpr std::size_t reject_overhead = header_size + 2;
inline constexpr std::size_t credit_message_size = 16;

struct AcceptData {
  std::uint64_t max_buffer_size = 0;
  std::uint64_t receive_credits = 0;
};

std::vector<std::byte> encode_connect(std::span<const std::byte> hello);
// The hello, or nullopt when `data` is not connect data of this back-end.
std::optional<std::vector<std::byte>> decode_connect(std::span<const std::byte> data);

std::vector<std::byte> encode_accept(const AcceptData& accept);
std::optional<AcceptData> decode_accept(std::span<const std::byte> data);

// The reason is cut so that the whole encoding fits `limit` bytes.
std::vector<std::byte> encode_reject(std::string_view reason, std::size_t limit);
std::optional<std::string> decode_reject(std::span<const std::byte> data);

void encode_credits(std::byte* out, std::uint64_t total_returned) noexcept;
std::optional<std::uint64_t> decode_credits(std::span<const std::byte> data) noexcept;

}  // namespace netio::fabric::wire
