// SPDX-License-Identifier: MIT
// How messages are packed into high-throughput pages: each message is an 8-byte
// little-endian length followed by its bytes. A message may continue in the next page(s);
// its length field never does: a page with fewer than 8 bytes free is sent as it is.
// So a page ending in 1 to 7 bytes that cannot be a length is malformed (truncated).
#pragma once

#include "budget_charge.hpp"
#include "message_parts.hpp"
#include "netio/internal/little_endian.hpp"
#include "reassembly_spare.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace netio::detail {

constexpr std::size_t message_header_size = 8;

// Parses the pages of one connection, in order. Not thread-safe (one consumer at a time).
//
// A message that spans pages is joined where it started when that page's buffer has room
// for the rest (libfabric's receive buffers do: pages are filled only to 768 KiB there), so
// it stays a view of one page; otherwise it is reassembled into memory of its own, which
// starts at one receive buffer's size and doubles as the bytes arrive (a length field alone
// makes it reserve no more than a buffer the connection holds anyway). What it takes
// beyond `allowance` (room counted already, with the connection's buffers) is counted
// against `budget` (if any) until take_reassembled() hands it out. A message that does not
// fit the budget is an error (its sender is disconnected). With a `spare`, a reassembly
// starts in the spare's memory, and recycle_reassembled() leaves it there again.
class PageParser {
 public:
  enum class Result { message, need_page, error };

  explicit PageParser(std::size_t max_message_size, std::shared_ptr<ReceiveBudget> budget = {},
                      std::size_t allowance = 0, ReassemblySpare* spare = nullptr)
      : max_message_size_(max_message_size),
        allowance_(allowance),
        assembly_charge_(std::move(budget)),
        reassembly_spare_(spare) {}

  // Starts on the next page; the bytes must stay valid until next() asks for another page.
  // `spare` is the writable rest of the page's buffer, right after its bytes (may be
  // empty), and `owner` keeps bytes and spare alive: the parser holds on to it while it
  // joins a message in that spare room.
  void set_page(std::span<const std::byte> page, std::span<std::byte> spare = {},
                std::shared_ptr<const void> owner = {}) noexcept {
    page_ = page;
    spare_ = spare;
    owner_ = std::move(owner);
    offset_ = 0;
  }

  // On Result::message: view() is the message, valid until the next call of next(). It
  // lies in the current page, unless joined_page() is set (it lies in that earlier page,
  // which the caller keeps alive by holding the pointer) or reassembled() is true
  // (take_reassembled() hands over its memory). A message whose length ended the previous
  // page and whose bytes fill this one from its start lies in this page.
  Result next();
  std::span<const std::byte> view() const noexcept { return view_; }
  const std::shared_ptr<const void>& joined_page() const noexcept { return joined_page_; }
  bool reassembled() const noexcept { return reassembled_; }
  std::vector<std::byte> take_reassembled() noexcept {
    assembly_charge_.release();
    return std::move(assembly_);
  }
  // Instead of take_reassembled(), once view() is no longer used: the memory goes to the
  // spare (or is freed without one).
  void recycle_reassembled() noexcept;

  bool mid_message() const noexcept { return assembling_; }
  // After a message: when it ended the page, lets go of the page's owner (the caller may
  // drop its own hold too, so that the page goes back while its last message is out) and
  // returns true; the next next() asks for a page.
  bool release_finished_page() noexcept {
    if (assembling_ || offset_ != page_.size()) return false;
    owner_.reset();
    return true;
  }
  const std::string& error() const noexcept { return error_; }

 private:
  Result continue_message();
  // The message's first `in_page` bytes end the current page; the rest comes in later ones.
  bool begin_spanning(std::size_t in_page);  // false (error set) when it does not fit the budget
  // Appends to the reassembly, growing it geometrically up to the message's length; false
  // (error set) when the growth does not fit the budget.
  bool append(const std::byte* bytes, std::size_t count);

  std::size_t max_message_size_;
  std::size_t allowance_;
  std::size_t first_capacity_ = 0;  // of the reassembly: a receive buffer's size
  std::span<const std::byte> page_;
  std::span<std::byte> spare_;
  std::shared_ptr<const void> owner_;
  std::size_t offset_ = 0;
  std::span<const std::byte> view_;
  bool reassembled_ = false;
  bool assembling_ = false;
  std::size_t expected_ = 0;   // length of the message being assembled
  std::size_t assembled_ = 0;  // how much of it the parser has seen
  // Joining in place: where the message starts, where its next bytes go, and the page.
  const std::byte* join_start_ = nullptr;
  std::byte* join_next_ = nullptr;
  std::shared_ptr<const void> join_page_;
  std::shared_ptr<const void> joined_page_;  // of the message in view_, when joined
  std::vector<std::byte> assembly_;
  BudgetCharge assembly_charge_;  // assembly_'s capacity beyond allowance_
  ReassemblySpare* reassembly_spare_;
  std::string error_;
};

}  // namespace netio::detail

namespace netio::detail {

// Packs one message into pages, page by page: fill() writes as much as fits after `used`.
// The message is one span, or the concatenation of several (a header and a payload, packed
// without being copied together first); the spans must outlive the packer.
class MessagePacker {
 public:
  explicit MessagePacker(std::span<const std::byte> message) noexcept
      : single_(message), parts_(&single_, 1), size_(message.size()) {}
  // `size` is total_size(parts), which the caller has computed already.
  MessagePacker(MessageParts parts, std::size_t size) noexcept : parts_(parts), size_(size) {}
  MessagePacker(const MessagePacker&) = delete;
  MessagePacker& operator=(const MessagePacker&) = delete;

  void fill(std::byte* page, std::size_t& used, std::size_t page_size) noexcept;
  bool done() const noexcept { return header_written_ && written_ == size_; }
  bool started() const noexcept { return header_written_; }
  std::size_t size() const noexcept { return size_; }
  // A message of `size` bytes (total_size(parts)) that fits whole after `used`: its length
  // and its parts, without a packer's bookkeeping (the common case of small messages; going
  // through fill() cost 15 % of the 8-byte message rate).
  static void write_whole(std::byte* page, std::size_t& used, MessageParts parts, std::size_t size) noexcept {
    std::byte* at = page + used;
    store_le<std::uint64_t>(at, size);
    at += message_header_size;
    for (const auto& part : parts) {
      if (!part.empty()) std::memcpy(at, part.data(), part.size());
      at += part.size();
    }
    used += message_header_size + size;
  }
  // A page that cannot take another length field is full and goes out as it is.
  static bool page_full(std::size_t used, std::size_t page_size) noexcept {
    return page_size - used < message_header_size;
  }

 private:
  std::span<const std::byte> single_;  // the one part of a one-span message
  std::span<const std::span<const std::byte>> parts_;
  std::size_t size_;
  std::size_t part_ = 0;     // the part being written
  std::size_t offset_ = 0;   // how much of it is written
  std::size_t written_ = 0;  // of the whole message
  bool header_written_ = false;
};

}  // namespace netio::detail
