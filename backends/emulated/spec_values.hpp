// SPDX-License-Identifier: MIT
// The values of an emulation spec (durations, sizes, rates, percentages, numbers), parsed
// without exceptions: each parser returns the value or a message saying what is wrong.
// Pure: no clock, no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace netio::emulated {

template <typename T>
struct Parsed {
  std::variant<T, std::string> result;
  bool ok() const noexcept { return result.index() == 0; }
  const T& value() const { return std::get<0>(result); }
  const std::string& error() const { return std::get<1>(result); }
};

// A finite number, all of `text` ("2.5", "1e3").
Parsed<double> parse_number(std::string_view text);
// "50us", "1.5ms", "2s", "100ns", "10µs": nanoseconds (fractional allowed). A unit is required
// (except for 0).
Parsed<double> parse_duration_ns(std::string_view text);
// "ns", "us", "µs", "ms", "s": nanoseconds per unit.
Parsed<double> parse_time_unit(std::string_view text);
// "64", "64B", "4K", "4KiB", "1MiB", "1G": bytes (binary multiples).
Parsed<std::uint64_t> parse_size(std::string_view text);
// "10Gbps", "100Mbps", "1.25GB/s", "500MiB/s": bytes per second (> 0).
Parsed<double> parse_rate(std::string_view text);
// "25%" or "0.25": a fraction in [0, 1].
Parsed<double> parse_fraction(std::string_view text);
// A non-negative integer that fits `max`.
Parsed<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t max);

// Text without leading and trailing spaces.
std::string_view trim(std::string_view text) noexcept;
// "2.5 Gb/s", "1.25 GB/s" style, for messages and tools.
std::string format_rate(double bytes_per_second);

}  // namespace netio::emulated
