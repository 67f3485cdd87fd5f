// SPDX-License-Identifier: MIT
// Whole messages in little-endian fields, with bounds checks: the one codec of netio's
// message formats (the DFS control messages, scheduled push's and pub/sub's messages).
//
// WireWriter puts fields one after the other, into a buffer of a known size (writing past
// its end is an encoder bug: std::logic_error) or into a vector that grows.
// WireReader takes them back in the same order. Every read checks the bytes left; a message
// that is too short, too long or has a bad header is refused with
// Error(Errc::protocol_error, "<what>: <reason>"), `what` naming the message kind.
//
// The common header of the DFS and scheduled-push messages is 4 bytes:
//   u8 type, u8 version, u8 flags, u8 reserved (0)
#pragma once

#include "netio/internal/little_endian.hpp"
#include "netio/internal/reject.hpp"

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace netio::detail {

inline constexpr std::size_t wire_header_size = 4;

class WireWriter {
 public:
  // Grows a vector of its own (take() hands it over).
  WireWriter() : growing_(true) {}
  // Writes into `out`, which the message fills exactly (written() says how far).
  explicit WireWriter(std::span<std::byte> out) : out_(out) {}

  template <std::integral T>
  void put(T value) {
    store_le(room(sizeof(T)), value);
  }
  // The low `width` bytes of `value` (a field narrower than its type, e.g. a 2-byte length).
  void put_bits(std::uint64_t value, std::size_t width) {
    std::byte* p = room(width);
    for (std::size_t k = 0; k < width; ++k) p[k] = std::byte{static_cast<std::uint8_t>(value >> (8 * k))};
  }
  void put_bytes(std::span<const std::byte> bytes) {
    if (!bytes.empty()) std::memcpy(room(bytes.size()), bytes.data(), bytes.size());
  }
  // A string with a 16-bit length in front; Errc::message_too_large when longer than `max`.
  void put_string(std::string_view text, std::size_t max) {
    if (text.size() > max || text.size() > 0xffff) {
      throw Error(Errc::message_too_large, "a " + std::to_string(text.size()) + "-byte field is longer than the " +
                                               std::to_string(max) + " bytes allowed");
    }
    put(static_cast<std::uint16_t>(text.size()));
    put_bytes(std::as_bytes(std::span(text)));
  }
  // The common 4-byte header.
  void put_header(std::uint8_t type, std::uint8_t version, std::uint8_t flags) {
    put(type);
    put(version);
    put(flags);
    put(std::uint8_t{0});
  }

  std::size_t written() const noexcept { return at_; }
  // The growing vector, moved out.
  std::vector<std::byte> take() {
    owned_.resize(at_);
    return std::move(owned_);
  }

 private:
  std::byte* room(std::size_t count) {
    if (growing_) {
      if (owned_.size() < at_ + count) owned_.resize(std::max(at_ + count, 2 * owned_.size()));
      out_ = owned_;
    } else if (out_.size() - at_ < count) {
      throw std::logic_error("wire encoder: " + std::to_string(at_ + count) + " bytes written into " +
                             std::to_string(out_.size()));
    }
    std::byte* p = out_.data() + at_;
    at_ += count;
    return p;
  }

  bool growing_ = false;
  std::vector<std::byte> owned_;
  std::span<std::byte> out_;
  std::size_t at_ = 0;
};

class WireReader {
 public:
  // `what` names the message kind in errors ("DFS proposal"); it must outlive the reader.
  WireReader(std::span<const std::byte> bytes, std::string_view what) noexcept : bytes_(bytes), what_(what) {}

  template <std::integral T>
  T get(std::string_view field) {
    need(sizeof(T), field);
    const T value = load_le<T>(bytes_.data() + at_);
    at_ += sizeof(T);
    return value;
  }
  // `width` bytes as an unsigned number (a field narrower than its type).
  std::uint64_t get_bits(std::size_t width, std::string_view field) {
    need(width, field);
    std::uint64_t value = 0;
    for (std::size_t k = 0; k < width; ++k)
      value |= std::uint64_t{std::to_integer<std::uint8_t>(bytes_[at_ + k])} << (8 * k);
    at_ += width;
    return value;
  }
  std::span<const std::byte> get_bytes(std::size_t count, std::string_view field) {
    need(count, field);
    const auto bytes = bytes_.subspan(at_, count);
    at_ += count;
    return bytes;
  }
  // What put_string wrote; longer than `max` is refused.
  std::string get_string(std::string_view field, std::size_t max) {
    const auto length = get<std::uint16_t>(field);
    if (length > max) {
      fail(std::string(field) + " is " + std::to_string(length) + " bytes long, at most " + std::to_string(max) +
           " allowed");
    }
    const auto bytes = get_bytes(length, field);
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }

  // Refuses a message of another size than `size` ("N bytes, expected S").
  void expect_size(std::size_t size) const {
    if (bytes_.size() != size) fail(std::to_string(bytes_.size()) + " bytes, expected " + std::to_string(size));
  }
  // Refuses a message shorter than `size` ("N bytes, expected at least S").
  void expect_at_least(std::size_t size) const {
    if (bytes_.size() < size) fail(std::to_string(bytes_.size()) + " bytes, expected at least " + std::to_string(size));
  }
  // Refuses bytes left over after the last field.
  void expect_end() const {
    if (at_ != bytes_.size()) fail(std::to_string(bytes_.size() - at_) + " bytes left over after the last field");
  }

  // Reads the common 4-byte header, refusing another type or version, flags outside
  // `flags_allowed` and a reserved byte other than 0. Returns the flags.
  std::uint8_t get_header(std::uint8_t type, std::uint8_t version, std::uint8_t flags_allowed) {
    const auto found_type = get<std::uint8_t>("type");
    if (found_type != type) fail("type byte " + std::to_string(found_type) + ", expected " + std::to_string(type));
    const auto found_version = get<std::uint8_t>("version");
    if (found_version != version) {
      fail("version " + std::to_string(found_version) + ", this side speaks " + std::to_string(version));
    }
    const auto flags = get<std::uint8_t>("flags");
    if ((flags & ~flags_allowed) != 0) fail("unknown flags " + std::to_string(flags));
    if (const auto reserved = get<std::uint8_t>("reserved byte"); reserved != 0) {
      fail("reserved byte is " + std::to_string(reserved));
    }
    return flags;
  }

  std::size_t offset() const noexcept { return at_; }
  std::size_t remaining() const noexcept { return bytes_.size() - at_; }
  std::string_view what() const noexcept { return what_; }
  // Refuses the message: Error(Errc::protocol_error, "<what>: <reason>").
  [[noreturn]] void fail(std::string_view reason) const { reject(Errc::protocol_error, what_, reason); }

 private:
  void need(std::size_t count, std::string_view field) const {
    if (bytes_.size() - at_ < count) {
      fail("truncated at " + std::string(field) + " (" + std::to_string(bytes_.size()) + " bytes, " +
           std::to_string(count) + " needed from offset " + std::to_string(at_) + ")");
    }
  }

  std::span<const std::byte> bytes_;
  std::string_view what_;
  std::size_t at_ = 0;
};

}  // namespace netio::detail
