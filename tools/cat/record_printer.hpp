// SPDX-License-Identifier: MIT
// How netio_cat sub shows what arrives: hex (one line per message: tag, size, publisher,
// bytes in hex), raw (the payload bytes as they are, nothing else), or count (messages and
// bytes per tag, each second and at the end).
#pragma once

#include "netio/pubsub/subscription.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace netio::tools {

enum class CatFormat { hex, raw, count };

// Not thread-safe: one consumer at a time.
class RecordPrinter {
 public:
  RecordPrinter(CatFormat format, std::FILE* out) : format_(format), out_(out) {}

  // hex and raw: written and flushed at once (a terminal, file or pipe sees each record as it
  // arrives; a tool killed afterwards has lost nothing it printed).
  void print(pubsub::Tag tag, std::span<const std::byte> data, std::string_view publisher);
  // count: the counts since the last call, one line per tag (on stderr, so stdout stays the result).
  void print_interval(double seconds);
  // count: the totals on `out`; the others: nothing.
  void print_totals() const;
  std::uint64_t messages() const noexcept { return messages_; }

 private:
  struct Counts {
    std::uint64_t messages = 0;
    std::uint64_t bytes = 0;
    std::uint64_t messages_reported = 0;
  };
  CatFormat format_;
  std::FILE* out_;
  std::map<pubsub::Tag, Counts> counts_;
  std::uint64_t messages_ = 0;
};

}  // namespace netio::tools
