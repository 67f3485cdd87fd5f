// SPDX-License-Identifier: MIT
// The result of one throughput run (one message size), as reported by netio_throughput
// and netio_recv, and its text table and JSON forms (their man pages: results: [{size,
// messages, bytes, seconds, msgs_per_s, gbps, lost, duplicated, corrupt}]).
#pragma once

#include "json_writer.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace netio::tools {

struct Verification {
  std::uint64_t lost = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t corrupt = 0;

  bool clean() const noexcept { return lost == 0 && duplicated == 0 && corrupt == 0; }
};

struct ThroughputResult {
  std::uint64_t size = 0;      // message size in bytes
  std::uint64_t messages = 0;  // messages sent / received (corrupt ones included)
  std::uint64_t bytes = 0;     // payload bytes
  double seconds = 0;
  std::optional<Verification> verification;  // receiver with --verify only
  bool complete = true;                      // false: the run was cut (no RUN_END seen, a limit, Ctrl-C)

  double msgs_per_s() const noexcept { return seconds > 0 ? static_cast<double>(messages) / seconds : 0; }
  // Payload only, 10^9 bits per second.
  double gbps() const noexcept { return seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0; }
};

enum class VerificationColumns {
  none,      // the sender: it cannot know
  reported,  // the receiver: lost/duplicated/corrupt, null in JSON when not verified
};

// One JSON object {"results":[...]}; with VerificationColumns::reported, lost, duplicated
// and corrupt are always present (null when the run was not verified).
void write_results_json(JsonWriter& json, std::span<const ThroughputResult> results, VerificationColumns columns);
// The array of that object alone, as the value of a key written before.
void write_results_array(JsonWriter& json, std::span<const ThroughputResult> results, VerificationColumns columns);

// Streams received at the same time (several senders, several tags), size by size: the k-th
// run of a size in every stream merged into one (messages, bytes and verification summed,
// the longest time, complete only if all were), so that msgs_per_s and gbps are the
// aggregate rates; in the order the sizes first appear.
std::vector<ThroughputResult> merge_concurrent_results(std::span<const std::vector<ThroughputResult>> streams);

// A table with a header line, one line per run; incomplete runs are marked with '*'.
std::string results_table(std::span<const ThroughputResult> results, VerificationColumns columns);

}  // namespace netio::tools
