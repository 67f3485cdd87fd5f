// SPDX-License-Identifier: MIT
// Sizes and durations as people type them on a command line, and back.
//
// Sizes: a non-negative number with an optional unit, case-insensitive:
//   B (bytes, the default), K / KiB = 1024, M / MiB = 1024², G / GiB = 1024³.
// The short forms are binary like iperf3's (-l 128K = 131072 bytes). "KB", "MB" and "GB"
// are refused as ambiguous (1000 or 1024?): write KiB or the number of bytes.
// A fraction is accepted when the result is a whole number of bytes: 1.5KiB = 1536.
//
// Durations: a non-negative number with a unit: ns, us (or µs), ms, s, m / min, h.
// A bare number means seconds, as in iperf3 (-t 10). Fractions are fine: 1.5s, 0.5ms;
// the result is rounded to whole nanoseconds.
//
// Both parsers return either the value or an error message that quotes the input.
#pragma once

#include "netio/error.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace netio::tools {

template <typename T>
class ParseResult {
 public:
  ParseResult(T value) : result_(std::move(value)) {}  // NOLINT: implicit on purpose
  static ParseResult failure(std::string message) { return ParseResult(Failure{std::move(message)}); }

  bool ok() const noexcept { return std::holds_alternative<T>(result_); }
  explicit operator bool() const noexcept { return ok(); }
  // Throws netio::Error (Errc::invalid_option) with the error message, which quotes the
  // input, when parsing failed.
  const T& value() const;
  const std::string& error() const { return std::get<Failure>(result_).message; }

 private:
  struct Failure {
    std::string message;
  };
  explicit ParseResult(Failure failure) : result_(std::move(failure)) {}
  std::variant<T, Failure> result_;
};

ParseResult<std::uint64_t> parse_size(std::string_view text);
ParseResult<std::chrono::nanoseconds> parse_duration(std::string_view text);

// "8 B", "4 KiB", "1.5 MiB": for tables and messages.
std::string format_size(std::uint64_t bytes);
// "8", "4KiB", "1536": re-parsable by parse_size, exact.
std::string format_size_compact(std::uint64_t bytes);
// "500ms", "2s", "10us", "1.5s": re-parsable by parse_duration, for --help defaults.
std::string format_duration(std::chrono::nanoseconds duration);

template <typename T>
const T& ParseResult<T>::value() const {
  if (!ok()) throw Error(Errc::invalid_option, error());
  return std::get<T>(result_);
}

}  // namespace netio::tools
