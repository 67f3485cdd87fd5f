// SPDX-License-Identifier: MIT
#include "pingpong_protocol.hpp"

#include "checksum.hpp"

#include "netio/error.hpp"

#include <algorithm>
#include <cstring>

namespace netio::tools {

PingMessage::PingMessage(std::size_t size) : buffer_(size) {
  if (size == 0) throw Error(Errc::invalid_option, "a ping needs at least 1 byte, not 0");
  for (std::size_t i = 0; i < size; ++i) buffer_[i] = static_cast<std::byte>(i * 31 + 7);
}

std::span<const std::byte> PingMessage::stamp(std::uint64_t sequence) noexcept {
  // Bit 63 clear: a ping must never look like a control frame.
  std::byte word[8];
  detail::store_le<std::uint64_t>(word, sequence & ~(std::uint64_t{1} << 63));
  std::memcpy(buffer_.data(), word, std::min<std::size_t>(8, buffer_.size()));
  return buffer_;
}

bool PingMessage::is_echo_of(std::span<const std::byte> reply, std::uint64_t sequence) const noexcept {
  if (reply.size() != buffer_.size()) return false;
  std::byte word[8];
  detail::store_le<std::uint64_t>(word, sequence & ~(std::uint64_t{1} << 63));
  const std::size_t head = std::min<std::size_t>(8, buffer_.size());
  return std::memcmp(reply.data(), word, head) == 0 &&
         std::memcmp(reply.data() + head, buffer_.data() + head, buffer_.size() - head) == 0;
}

}  // namespace netio::tools
