// SPDX-License-Identifier: MIT
#include "control_frame.hpp"

#include "checksum.hpp"

namespace netio::tools {

ControlFrameBytes encode_control_frame(const ControlFrame& frame) noexcept {
  ControlFrameBytes bytes{};
  detail::store_le<std::uint64_t>(bytes.data(), control_magic);
  detail::store_le<std::uint32_t>(bytes.data() + 8, static_cast<std::uint32_t>(frame.kind));
  detail::store_le<std::uint32_t>(bytes.data() + 12, control_version);
  detail::store_le<std::uint64_t>(bytes.data() + 16, frame.a);
  detail::store_le<std::uint64_t>(bytes.data() + 24, frame.b);
  detail::store_le<std::uint64_t>(bytes.data() + 32, frame.c);
  detail::store_le<std::uint64_t>(bytes.data() + 40, checksum64(std::span(bytes).first(40)));
  return bytes;
}

std::optional<ControlFrame> decode_control_frame(std::span<const std::byte> message) noexcept {
  if (message.size() != control_frame_size) return std::nullopt;
  const std::byte* p = message.data();
  if (detail::load_le<std::uint64_t>(p) != control_magic || detail::load_le<std::uint32_t>(p + 12) != control_version)
    return std::nullopt;
  if (detail::load_le<std::uint64_t>(p + 40) != checksum64(message.first(40))) return std::nullopt;
  return ControlFrame{static_cast<ControlKind>(detail::load_le<std::uint32_t>(p + 8)),
                      detail::load_le<std::uint64_t>(p + 16), detail::load_le<std::uint64_t>(p + 24),
                      detail::load_le<std::uint64_t>(p + 32)};
}

}  // namespace netio::tools
