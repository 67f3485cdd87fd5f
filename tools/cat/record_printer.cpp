// SPDX-License-Identifier: MIT
#include "record_printer.hpp"

#include "netio/printable.hpp"

#include <fmt/format.h>

namespace netio::tools {

void RecordPrinter::print(pubsub::Tag tag, std::span<const std::byte> data, std::string_view publisher) {
  ++messages_;
  auto& c = counts_[tag];
  ++c.messages;
  c.bytes += data.size();
  switch (format_) {
    case CatFormat::raw:
      std::fwrite(data.data(), 1, data.size(), out_);
      std::fflush(out_);  // a record as it arrives, to a file or pipe too: nothing held if the tool is killed
      break;
    case CatFormat::hex: {
      std::string hex;
      hex.reserve(data.size() * 2);
      for (const std::byte b : data) fmt::format_to(std::back_inserter(hex), "{:02x}", std::to_integer<unsigned>(b));
      fmt::print(out_, "tag {} size {} from {}: {}\n", tag, data.size(), printable(publisher), hex);
      std::fflush(out_);
      break;
    }
    case CatFormat::count: break;
  }
}

void RecordPrinter::print_interval(double seconds) {
  if (format_ != CatFormat::count) return;
  for (auto& [tag, c] : counts_) {
    fmt::print(stderr, "[{:>7.2f} s] tag {}: {} messages\n", seconds, tag, c.messages - c.messages_reported);
    c.messages_reported = c.messages;
  }
}

void RecordPrinter::print_totals() const {
  if (format_ != CatFormat::count) return;
  for (const auto& [tag, c] : counts_) fmt::print(out_, "tag {}: {} messages, {} bytes\n", tag, c.messages, c.bytes);
}

}  // namespace netio::tools
