// SPDX-License-Identifier: MIT
#include "page_format.hpp"

#include "netio/internal/little_endian.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace netio::detail {

namespace {
constexpr std::size_t prefetch_distance = 512;  // bytes ahead of the message handed out
}  // namespace

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
    // The lines a few messages ahead, asked for now: a page read in place (shm://) was just
    // written on the sender's core, and each line missed one at a time would stall every
    // small message.
    if (page_.size() - offset_ > prefetch_distance) __builtin_prefetch(page_.data() + offset_ + prefetch_distance);
    return Result::message;
  }
  // The message continues in the next page(s).
  assembling_ = true;
  expected_ = length;
  return begin_spanning(in_page) ? Result::need_page : Result::error;
}

bool PageParser::begin_spanning(std::size_t in_page) {
  assembled_ = in_page;
  const std::byte* from = page_.data() + offset_;
  offset_ = page_.size();
  if (in_page > 0 && owner_ && spare_.size() >= expected_ - in_page) {
    join_start_ = from;
    join_next_ = spare_.data();
    join_page_ = std::move(owner_);
    return true;
  }
  // The receiver holds a buffer of this size per connection anyway (and a budget counts one
  // beside the credits as reassembly room), so the reassembly starts there rather than at
  // the bytes in hand: a copied 1 MiB message is one allocation, a larger one a few.
  // Growing from less cost a fresh allocation, a copy and its page faults per doubling.
  first_capacity_ = std::max(allowance_, page_.size() + spare_.size());
  owner_.reset();
  assembly_charge_.release();
  assembly_ = {};
  if (reassembly_spare_ != nullptr) {
    auto kept = reassembly_spare_->take();
    // A block more than twice what this message can need (one far larger message left it)
    // is freed rather than held on: what the socket keeps follows the sizes now arriving.
    if (kept.bytes.capacity() != 0 && kept.bytes.capacity() <= 2 * std::max(expected_, first_capacity_)) {
      assembly_ = std::move(kept.bytes);
      assembly_charge_ = std::move(kept.charge);  // the whole capacity; this connection's room covers part
      const std::size_t capacity = assembly_.capacity();
      assembly_charge_.shrink_to(capacity > allowance_ ? capacity - allowance_ : 0);
    }
  }
  return append(from, in_page);
}

void PageParser::recycle_reassembled() noexcept {
  std::vector<std::byte> memory = std::exchange(assembly_, {});
  // A fresh charge on the same budget stays behind: the next reassembly counts on it.
  BudgetCharge charge = std::exchange(assembly_charge_, BudgetCharge(assembly_charge_.budget()));
  if (reassembly_spare_ != nullptr) reassembly_spare_->keep(std::move(memory), std::move(charge));
}

bool PageParser::append(const std::byte* bytes, std::size_t count) {
  const std::size_t size = assembly_.size() + count;
  if (size > assembly_.capacity()) {
    // Doubling from one receive buffer, capped at the message's length: a length field alone
    // reserves no more than a buffer the connection holds already.
    const std::size_t capacity = std::min(expected_, std::max({size, 2 * assembly_.capacity(), first_capacity_}));
    const std::size_t beyond = capacity > allowance_ ? capacity - allowance_ : 0;
    if (beyond > assembly_charge_.bytes() && !assembly_charge_.grow(beyond - assembly_charge_.bytes())) {
      const auto& budget = *assembly_charge_.budget();
      error_ = fmt::format(
          "a {}-byte message spanning pages needs more reassembly memory than the receive "
          "memory budget has free ({} of {} bytes held)",
          expected_, budget.used(), budget.limit());
      assembly_charge_.release();
      assembly_ = {};
      return false;
    }
    assembly_.reserve(capacity);
  }
  assembly_.insert(assembly_.end(), bytes, bytes + count);
  return true;
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
    return begin_spanning(left) ? Result::need_page : Result::error;
  }
  const std::size_t take = std::min(left, expected_ - assembled_);
  const std::byte* from = page_.data() + offset_;
  if (take == 0) {
    // An empty page in the middle of a message: nothing to copy (and `from` may be null).
  } else if (join_page_) {
    std::memcpy(join_next_, from, take);
    join_next_ += take;
  } else if (!append(from, take)) {
    return Result::error;
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
  // Works on local copies: memcpy() may write anywhere as far as the compiler knows, so
  // members and `used` would be reloaded from memory after every copy (a store-to-load
  // stall per part that took a sixth of a 64-byte publish).
  std::size_t at = used;
  if (!header_written_) {
    if (page_full(at, page_size)) return;
    store_le<std::uint64_t>(page + at, size_);
    at += message_header_size;
    header_written_ = true;
  }
  std::size_t part = part_, offset = offset_, written = written_;
  while (written < size_ && at < page_size) {
    const auto bytes = parts_[part];
    if (offset == bytes.size()) {  // bytes are left, so further parts hold them
      ++part;
      offset = 0;
      continue;
    }
    const std::size_t take = std::min(page_size - at, bytes.size() - offset);
    std::memcpy(page + at, bytes.data() + offset, take);
    at += take;
    offset += take;
    written += take;
  }
  part_ = part;
  offset_ = offset;
  written_ = written;
  used = at;
}

}  // namespace netio::detail
