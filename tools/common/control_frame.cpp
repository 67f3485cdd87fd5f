// SPDX-License-Identifier: MIT
#include "control_frame.hpp"

#include "checksum.hpp"

namespace netio::tools {

ControlFrameBytes encode_control_frame(const ControlFrame& frame) noexcept {
  ControlFrameBytes bytes{};
  store_le64(bytes.data(), kControlMagic);
  store_le32(bytes.data() + 8, static_cast<std::uint32_t>(frame.kind));
  store_le32(bytes.data() + 12, kControlVersion);
  store_le64(bytes.data() + 16, frame.a);
  store_le64(bytes.data() + 24, frame.b);
  store_le64(bytes.data() + 32, frame.c);
  store_le64(bytes.data() + 40, checksum64(std::span(bytes).first(40)));
  return bytes;
}

std::optional<ControlFrame> decode_control_frame(std::span<const std::byte> message) noexcept {
  if (message.size() != kControlFrameSize) return std::nullopt;
  const std::byte* p = message.data();
  if (load_le64(p) != kControlMagic || load_le32(p + 12) != kControlVersion) return std::nullopt;
  if (load_le64(p + 40) != checksum64(message.first(40))) return std::nullopt;
  return ControlFrame{static_cast<ControlKind>(load_le32(p + 8)), load_le64(p + 16), load_le64(p + 24),
                      load_le64(p + 32)};
}

}  // namespace netio::tools
