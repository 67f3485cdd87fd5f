// SPDX-License-Identifier: MIT
#include "wire.hpp"

#include <fmt/format.h>

namespace netio::pubsub::detail {

void WireWriter::put_string(std::string_view text, std::size_t max) {
  if (text.size() > max) {
    throw Error(Errc::message_too_large, fmt::format("a {}-byte field is longer than the {} bytes allowed", text.size(), max));
  }
  put(static_cast<std::uint16_t>(text.size()));
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  bytes_.insert(bytes_.end(), data, data + text.size());
}

std::string WireReader::get_string(std::string_view field, std::size_t max) {
  const auto length = get<std::uint16_t>(field);
  if (length > max) {
    throw Error(Errc::protocol_error, fmt::format("{}: {} is {} bytes long, at most {} allowed", what_, field, length, max));
  }
  need(length, field);
  std::string text(reinterpret_cast<const char*>(bytes_.data() + offset_), length);
  offset_ += length;
  return text;
}

void WireReader::expect_end() const {
  if (offset_ != bytes_.size()) {
    throw Error(Errc::protocol_error, fmt::format("{}: {} bytes left over after the last field", what_, bytes_.size() - offset_));
  }
}

void WireReader::need(std::size_t count, std::string_view field) const {
  if (bytes_.size() - offset_ < count) {
    throw Error(Errc::protocol_error, fmt::format("{}: truncated at {} ({} bytes, {} needed from offset {})", what_,
                                                  field, bytes_.size(), count, offset_));
  }
}

}  // namespace netio::pubsub::detail
