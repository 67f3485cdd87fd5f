#include "throughput_result.hpp"

#include "units.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace netio::tools {

void write_results_json(JsonWriter& json, std::span<const ThroughputResult> results, VerificationColumns columns) {
  json.begin_object().key("results").begin_array();
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
  json.end_array().end_object();
}

std::string results_table(std::span<const ThroughputResult> results, VerificationColumns columns) {
  const bool any_verified = std::any_of(results.begin(), results.end(),
                                        [](const ThroughputResult& r) { return r.verification.has_value(); });
  const bool verify_columns = columns == VerificationColumns::reported && any_verified;
  std::string out = fmt::format("{:>10} {:>12} {:>14} {:>9} {:>13} {:>9}", "size", "messages", "bytes", "seconds",
                                "msg/s", "Gb/s");
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

}  // namespace netio::tools
