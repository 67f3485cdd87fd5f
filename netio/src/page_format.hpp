// How messages are packed into high-throughput pages: each message is an 8-byte
// little-endian length followed by its bytes. A message may continue in the next page(s);
// its length field never does: a page with fewer than 8 bytes free is sent as it is.
// So a page ending in 1 to 7 bytes that cannot be a length is malformed (truncated).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace netio::detail {

constexpr std::size_t message_header_size = 8;

// Parses the pages of one connection, in order. Not thread-safe (one consumer at a time).
class PageParser {
 public:
  enum class Result { message, need_page, error };

  explicit PageParser(std::size_t max_message_size) : max_message_size_(max_message_size) {}

  // Starts on the next page; the bytes must stay valid until next() asks for another page.
  void set_page(std::span<const std::byte> page) noexcept {
    page_ = page;
    offset_ = 0;
  }

  // On Result::message: view() is the message. It lies in the current page, unless
  // reassembled() says it spanned pages, in which case take_reassembled() hands it over.
  // (A message whose length ended the previous page and whose bytes start this one and fit
  // in it lies in this page.)
  Result next();
  std::span<const std::byte> view() const noexcept { return view_; }
  bool reassembled() const noexcept { return reassembled_; }
  std::vector<std::byte> take_reassembled() noexcept { return std::move(assembly_); }

  bool mid_message() const noexcept { return assembling_; }
  const std::string& error() const noexcept { return error_; }

 private:
  std::size_t max_message_size_;
  std::span<const std::byte> page_;
  std::size_t offset_ = 0;
  std::span<const std::byte> view_;
  bool reassembled_ = false;
  bool assembling_ = false;
  std::size_t expected_ = 0;
  std::vector<std::byte> assembly_;
  std::string error_;
};

}  // namespace netio::detail

namespace netio::detail {

// Packs one message into pages, page by page: fill() writes as much as fits after `used`.
class MessagePacker {
 public:
  explicit MessagePacker(std::span<const std::byte> message) noexcept : message_(message) {}

  void fill(std::byte* page, std::size_t& used, std::size_t page_size) noexcept;
  bool done() const noexcept { return header_written_ && offset_ == message_.size(); }
  bool started() const noexcept { return header_written_; }
  // A page that cannot take another length field is full and goes out as it is.
  static bool page_full(std::size_t used, std::size_t page_size) noexcept {
    return page_size - used < message_header_size;
  }

 private:
  std::span<const std::byte> message_;
  std::size_t offset_ = 0;
  bool header_written_ = false;
};

}  // namespace netio::detail
