// SPDX-License-Identifier: MIT
#include "netio/printable.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace netio {
namespace {

// The length of the well-formed, printable UTF-8 sequence at the start of `text`; 0 when it
// starts with a control character or a byte that does not begin a well-formed sequence
// (overlong forms, surrogates and code points beyond U+10FFFF are not well-formed).
std::size_t printable_sequence(std::string_view text) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
  const std::uint8_t lead = byte(0);
  if (lead < 0x20 || lead == 0x7F) return 0;
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  std::uint8_t low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  if (lead == 0xC2 && byte(1) <= 0x9F) return 0;  // C1 controls, U+0080..U+009F
  return length;
}

}  // namespace

bool is_printable_utf8(std::string_view text) noexcept {
  while (!text.empty()) {
    const std::size_t length = printable_sequence(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const std::size_t length = printable_sequence(text);
    if (length == 0) {
      out += fmt::format("\\x{:02X}", static_cast<std::uint8_t>(text.front()));
      text.remove_prefix(1);
      continue;
    }
    if (text.front() == '\\') out += '\\';
    out.append(text.substr(0, length));
    text.remove_prefix(length);
  }
  return out;
}

}  // namespace netio
