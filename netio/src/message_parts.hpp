// SPDX-License-Identifier: MIT
// A message given as the concatenation of several spans (a header and a payload, say), as
// the send sockets' send_parts() take it.
#pragma once

#include <cstddef>
#include <span>

namespace netio::detail {

using MessageParts = std::span<const std::span<const std::byte>>;

inline std::size_t total_size(MessageParts parts) noexcept {
  std::size_t size = 0;
  for (const auto& part : parts) size += part.size();
  return size;
}

}  // namespace netio::detail
