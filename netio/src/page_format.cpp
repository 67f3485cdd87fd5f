#include "page_format.hpp"

#include "little_endian.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace netio::detail {

PageParser::Result PageParser::next() {
  reassembled_ = false;
  joined_page_.reset();
  if (assembling_) return continue_message();
  const std::size_t left = page_.size() - offset_;
  if (left == 0) {
    owner_.reset();
    return Result::need_page;
  }
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
  assembling_ = true;
  expected_ = length;
  begin_spanning(in_page);
  return Result::need_page;
}

void PageParser::begin_spanning(std::size_t in_page) {
  assembled_ = in_page;
  if (in_page > 0 && owner_ && spare_.size() >= expected_ - in_page) {
    join_start_ = page_.data() + offset_;
    join_next_ = spare_.data();
    join_page_ = std::move(owner_);
  } else {
    assembly_.clear();
    if (in_page > 0) {
      assembly_.reserve(expected_);
      assembly_.insert(assembly_.end(), page_.begin() + static_cast<std::ptrdiff_t>(offset_), page_.end());
    }
  }
  offset_ = page_.size();
  owner_.reset();
}

PageParser::Result PageParser::continue_message() {
  const std::size_t left = page_.size() - offset_;
  if (assembled_ == 0) {
    if (offset_ == 0 && left >= expected_) {
      // Only the length was in the previous page and the bytes fill this one from its
      // start (how large messages are sent): no copy needed.
      assembling_ = false;
      view_ = page_.subspan(0, expected_);
      offset_ = expected_;
      return Result::message;
    }
    begin_spanning(left);
    return Result::need_page;
  }
  const std::size_t take = std::min(left, expected_ - assembled_);
  const std::byte* from = page_.data() + offset_;
  if (take == 0) {
    // An empty page in the middle of a message: nothing to copy (and `from` may be null).
  } else if (join_page_) {
    std::memcpy(join_next_, from, take);
    join_next_ += take;
  } else {
    assembly_.insert(assembly_.end(), from, from + take);
  }
  assembled_ += take;
  offset_ += take;
  if (assembled_ < expected_) {
    owner_.reset();
    return Result::need_page;
  }
  assembling_ = false;
  if (join_page_) {
    view_ = std::span<const std::byte>(join_start_, expected_);
    joined_page_ = std::move(join_page_);
  } else {
    reassembled_ = true;
    view_ = assembly_;
  }
  return Result::message;
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
