// SPDX-License-Identifier: MIT
#include "bench_message.hpp"

#include "checksum.hpp"

#include "netio/error.hpp"

#include <string>

namespace netio::tools {
namespace {

std::size_t pattern_offset(std::size_t size) noexcept { return size >= 16 ? 16 : 8; }

std::uint64_t fold16(std::uint64_t x) noexcept { return (x ^ (x >> 16) ^ (x >> 32) ^ (x >> 48)) & 0xFFFF; }

std::uint64_t check64(std::uint64_t sequence, std::uint64_t salt, std::uint64_t pattern_checksum) noexcept {
  return mix64(pattern_checksum ^ mix64(sequence ^ salt));
}

}  // namespace

std::uint64_t RunKey::salt() const noexcept { return mix64((run << 32) ^ size); }

DataMessageBuilder::DataMessageBuilder(RunKey key, PayloadMode mode)
    : key_(key), mode_(mode), salt_(key.salt()), pattern_checksum_(0) {
  if (key.size < min_data_message_size) {
    throw Error(Errc::invalid_option, "benchmark messages must be at least " + std::to_string(min_data_message_size) +
                                          " bytes, not " + std::to_string(key.size));
  }
  buffer_.resize(key.size);
  for (std::size_t i = pattern_offset(buffer_.size()); i < buffer_.size(); ++i) {
    const std::uint64_t word = mix64(salt_ + i / 8);
    buffer_[i] = static_cast<std::byte>(word >> (8 * (i % 8)));
  }
  pattern_checksum_ = checksum64(std::span(buffer_).subspan(pattern_offset(buffer_.size())));
  if (mode_ == PayloadMode::per_message) base_pattern_ = buffer_;
}

void DataMessageBuilder::rewrite_pattern(std::uint64_t sequence) noexcept {
  const std::uint64_t key = mix64(sequence ^ salt_);
  std::byte key_bytes[8];
  detail::store_le<std::uint64_t>(key_bytes, key);
  for (std::size_t i = pattern_offset(buffer_.size()); i < buffer_.size(); ++i) {
    buffer_[i] = base_pattern_[i] ^ key_bytes[i % 8];
  }
  pattern_checksum_ = checksum64(std::span(buffer_).subspan(pattern_offset(buffer_.size())));
}

std::span<const std::byte> DataMessageBuilder::stamp(std::uint64_t sequence) noexcept {
  if (mode_ == PayloadMode::per_message) rewrite_pattern(sequence);
  const std::uint64_t check = check64(sequence, salt_, pattern_checksum_);
  detail::store_le<std::uint64_t>(buffer_.data(), (sequence << 16) | fold16(check));
  if (buffer_.size() >= 16) detail::store_le<std::uint64_t>(buffer_.data() + 8, check);
  return buffer_;
}

std::optional<std::uint64_t> verify_data_message(std::span<const std::byte> message, const RunKey& key,
                                                 std::uint64_t salt) noexcept {
  if (message.size() != key.size || message.size() < min_data_message_size) return std::nullopt;
  const std::uint64_t header = detail::load_le<std::uint64_t>(message.data());
  if ((header >> 63) != 0) return std::nullopt;
  const std::uint64_t sequence = header >> 16;
  const std::uint64_t check = check64(sequence, salt, checksum64(message.subspan(pattern_offset(message.size()))));
  if ((header & 0xFFFF) != fold16(check)) return std::nullopt;
  if (message.size() >= 16 && detail::load_le<std::uint64_t>(message.data() + 8) != check) return std::nullopt;
  return sequence;
}

ControlFrameBytes encode_run_begin(const RunKey& key, std::uint64_t planned_messages) noexcept {
  return encode_control_frame({ControlKind::run_begin, key.run, key.size, planned_messages});
}

ControlFrameBytes encode_run_end(const RunKey& key, std::uint64_t sent_messages) noexcept {
  return encode_control_frame({ControlKind::run_end, key.run, key.size, sent_messages});
}

ControlFrameBytes encode_end_of_stream(std::uint64_t runs) noexcept {
  return encode_control_frame({ControlKind::end_of_stream, runs, 0, 0});
}

}  // namespace netio::tools
