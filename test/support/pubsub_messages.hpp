// SPDX-License-Identifier: MIT
// Messages for the publish/subscribe tests: each names its tag and its number in that tag's
// sequence, and its remaining bytes depend on both, so a swapped, shifted, duplicated or
// corrupted message is caught. Thread-safe (no shared state); no Catch2 assertions inside.
#pragma once

#include "support/transports.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace netio::test {

inline std::vector<std::byte> pubsub_message(std::uint64_t tag, std::uint64_t sequence, std::size_t size = 64) {
  std::vector<std::byte> bytes = pattern(std::max<std::size_t>(size, 16), tag * 1'000'003 + sequence);
  std::memcpy(bytes.data(), &tag, 8);
  std::memcpy(bytes.data() + 8, &sequence, 8);
  return bytes;
}

// The sequence number of an intact message of `tag`, else nullopt.
inline std::optional<std::uint64_t> pubsub_sequence(std::uint64_t tag, std::span<const std::byte> bytes) {
  if (bytes.size() < 16) return std::nullopt;
  std::uint64_t named_tag = 0;
  std::uint64_t sequence = 0;
  std::memcpy(&named_tag, bytes.data(), 8);
  std::memcpy(&sequence, bytes.data() + 8, 8);
  if (named_tag != tag) return std::nullopt;
  const auto expected = pubsub_message(tag, sequence, bytes.size());
  if (!std::equal(bytes.begin(), bytes.end(), expected.begin())) return std::nullopt;
  return sequence;
}

// Per (source, tag): the sequences seen, checked for order. One thread at a time.
struct StreamChecker {
  struct Stream {
    std::optional<std::uint64_t> first;
    std::uint64_t next = 0;
    std::uint64_t received = 0;
    std::uint64_t gaps = 0;  // messages skipped (a jump forward)
  };
  std::map<std::pair<std::string, std::uint64_t>, Stream> streams;
  std::uint64_t corrupt = 0;
  std::uint64_t out_of_order = 0;  // repeats or steps back
  std::uint64_t received = 0;

  void check(const std::string& source, std::uint64_t tag, std::span<const std::byte> bytes) {
    ++received;
    const auto sequence = pubsub_sequence(tag, bytes);
    if (!sequence) {
      ++corrupt;
      return;
    }
    auto& s = streams[{source, tag}];
    if (!s.first) {
      s.first = *sequence;
    } else if (*sequence < s.next) {
      ++out_of_order;
      return;
    } else {
      s.gaps += *sequence - s.next;
    }
    s.next = *sequence + 1;
    ++s.received;
  }
  // Exactly 0 … count-1 of that stream arrived, in order.
  bool complete(const std::string& source, std::uint64_t tag, std::uint64_t count) const {
    const auto it = streams.find({source, tag});
    if (it == streams.end()) return count == 0;
    const auto& s = it->second;
    return s.first == 0 && s.received == count && s.next == count && s.gaps == 0;
  }
  bool clean() const { return corrupt == 0 && out_of_order == 0; }
};

}  // namespace netio::test
