#include "page_format.hpp"

#include "little_endian.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace netio::detail {

PageParser::Result PageParser::next() {
  reassembled_ = false;
  const std::size_t left = page_.size() - offset_;
  if (assembling_) {
    if (assembly_.empty() && offset_ == 0 && left >= expected_) {
      // Only the length was in the previous page and the bytes fill this one from its
      // start (how large messages are sent): no copy needed.
      assembling_ = false;
      view_ = page_.subspan(0, expected_);
      offset_ = expected_;
      return Result::message;
    }
    if (assembly_.capacity() < expected_) assembly_.reserve(expected_);
    const std::size_t take = std::min(left, expected_ - assembly_.size());
    assembly_.insert(assembly_.end(), page_.begin() + static_cast<std::ptrdiff_t>(offset_),
                     page_.begin() + static_cast<std::ptrdiff_t>(offset_ + take));
    offset_ += take;
    if (assembly_.size() < expected_) return Result::need_page;
    assembling_ = false;
    reassembled_ = true;
    view_ = assembly_;
    return Result::message;
  }
  if (left == 0) return Result::need_page;
  if (left < message_header_size) {
    error_ = fmt::format("truncated page: {} trailing bytes cannot hold a message length", left);
    return Result::error;
  }
  const auto length = load_le<std::uint64_t>(page_.data() + offset_);
  offset_ += message_header_size;
  if (length > max_message_size_) {
    error_ = fmt::format("message length {} exceeds the limit of {} bytes", length, max_message_size_);
    return Result::error;
  }
  const std::size_t in_page = page_.size() - offset_;
  if (length <= in_page) {
    view_ = page_.subspan(offset_, length);
    offset_ += length;
    return Result::message;
  }
  // The message continues in the next page(s).
  expected_ = length;
  assembly_.clear();
  if (in_page > 0) {
    assembly_.reserve(length);
    assembly_.insert(assembly_.end(), page_.begin() + static_cast<std::ptrdiff_t>(offset_), page_.end());
  }
  offset_ = page_.size();
  assembling_ = true;
  return Result::need_page;
}

}  // namespace netio::detail

namespace netio::detail {

void MessagePacker::fill(std::byte* page, std::size_t& used, std::size_t page_size) noexcept {
  if (!header_written_) {
    if (page_full(used, page_size)) return;
    store_le<std::uint64_t>(page + used, message_.size());
    used += message_header_size;
    header_written_ = true;
  }
  const std::size_t take = std::min(page_size - used, message_.size() - offset_);
  if (take > 0) std::memcpy(page + used, message_.data() + offset_, take);
  used += take;
  offset_ += take;
}

}  // namespace netio::detail
