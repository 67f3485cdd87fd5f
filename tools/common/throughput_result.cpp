// SPDX-License-Identifier: MIT
#include "throughput_result.hpp"

#include "units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace netio::tools {

void write_results_json(JsonWriter& json, std::span<const ThroughputResult> results, VerificationColumns columns) {
  json.begin_object().key("results");
  write_results_array(json, results, columns);
  json.end_object();
}

void write_results_array(JsonWriter& json, std::span<const ThroughputResult> results, VerificationColumns columns) {
  json.begin_array();
  for (const ThroughputResult& r : results) {
    json.begin_object()
        .field("size", r.size)
        .field("messages", r.messages)
        .field("bytes", r.bytes)
        .field("seconds", r.seconds)
        .field("msgs_per_s", r.msgs_per_s())
        .field("gbps", r.gbps());
    if (columns == VerificationColumns::reported) {
      const auto& v = r.verification;
      json.field("lost", v ? std::optional(v->lost) : std::nullopt)
          .field("duplicated", v ? std::optional(v->duplicated) : std::nullopt)
          .field("corrupt", v ? std::optional(v->corrupt) : std::nullopt);
    }
    json.end_object();
  }
  json.end_array();
}

std::string results_table(std::span<const ThroughputResult> results, VerificationColumns columns) {
  const bool any_verified =
      std::any_of(results.begin(), results.end(), [](const ThroughputResult& r) { return r.verification.has_value(); });
  const bool verify_columns = columns == VerificationColumns::reported && any_verified;
  std::string out =
      fmt::format("{:>10} {:>12} {:>14} {:>9} {:>13} {:>9}", "size", "messages", "bytes", "seconds", "msg/s", "Gb/s");
  if (verify_columns) out += fmt::format(" {:>9} {:>10} {:>9}", "lost", "duplicated", "corrupt");
  out += '\n';
  bool any_incomplete = false;
  for (const ThroughputResult& r : results) {
    out += fmt::format("{:>10} {:>12} {:>14} {:>9.3f} {:>13.0f} {:>9.3f}", format_size(r.size), r.messages, r.bytes,
                       r.seconds, r.msgs_per_s(), r.gbps());
    if (verify_columns) {
      if (r.verification) {
        out += fmt::format(" {:>9} {:>10} {:>9}", r.verification->lost, r.verification->duplicated,
                           r.verification->corrupt);
      } else {
        out += fmt::format(" {:>9} {:>10} {:>9}", "-", "-", "-");
      }
    }
    if (!r.complete) {
      out += " *";
      any_incomplete = true;
    }
    out += '\n';
  }
  if (any_incomplete) out += "* run cut short: interrupted, stopped by a limit, or its end marker never arrived\n";
  return out;
}

std::vector<ThroughputResult> merge_concurrent_results(std::span<const std::vector<ThroughputResult>> streams) {
  std::vector<ThroughputResult> merged;
  // The k-th run of a size in one stream goes with the k-th run of that size in the others
  // (senders may run different sizes, or the same sizes in another order).
  std::vector<std::pair<std::uint64_t, std::size_t>> keys;  // (size, occurrence) of merged[i]
  for (const auto& stream : streams) {
    std::vector<std::pair<std::uint64_t, std::size_t>> seen;  // size → occurrences so far in this stream
    for (const auto& r : stream) {
      auto count = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == r.size; });
      if (count == seen.end()) count = seen.insert(seen.end(), {r.size, 0});
      const std::pair<std::uint64_t, std::size_t> key{r.size, count->second++};
      auto at = std::find(keys.begin(), keys.end(), key);
      if (at == keys.end()) {
        keys.push_back(key);
        merged.push_back(ThroughputResult{r.size, 0, 0, 0, std::nullopt, true});
        at = keys.end() - 1;
      }
      auto& m = merged[static_cast<std::size_t>(at - keys.begin())];
      m.messages += r.messages;
      m.bytes += r.bytes;
      m.seconds = std::max(m.seconds, r.seconds);
      m.complete = m.complete && r.complete;
      if (r.verification) {
        if (!m.verification) m.verification = Verification{};
        m.verification->lost += r.verification->lost;
        m.verification->duplicated += r.verification->duplicated;
        m.verification->corrupt += r.verification->corrupt;
      }
    }
  }
  return merged;
}

}  // namespace netio::tools
