// SPDX-License-Identifier: MIT
// Little-endian fields for the pub/sub wire formats: explicit byte order, explicit bounds.
#pragma once

#include "netio/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netio::pubsub::detail {

class WireWriter {
 public:
  template <typename T>
  void put(T value) {
    for (std::size_t i = 0; i < sizeof(T); ++i) bytes_.push_back(static_cast<std::byte>(static_cast<std::uint64_t>(value) >> (8 * i)));
  }
  // A string with a 16-bit length in front; throws when longer than `max`.
  void put_string(std::string_view text, std::size_t max);
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

// Reads fields in order; every read checks the bytes left and throws
// Errc::protocol_error naming `what` (the message kind) and the field.
class WireReader {
 public:
  WireReader(std::span<const std::byte> bytes, std::string_view what) : bytes_(bytes), what_(what) {}
  template <typename T>
  T get(std::string_view field) {
    need(sizeof(T), field);
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) value |= std::uint64_t{std::to_integer<std::uint8_t>(bytes_[offset_ + i])} << (8 * i);
    offset_ += sizeof(T);
    return static_cast<T>(value);
  }
  std::string get_string(std::string_view field, std::size_t max);
  // Throws when bytes are left over.
  void expect_end() const;

 private:
  void need(std::size_t count, std::string_view field) const;
  std::span<const std::byte> bytes_;
  std::string_view what_;
  std::size_t offset_ = 0;
};

}  // namespace netio::pubsub::detail
