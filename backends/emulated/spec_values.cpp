// SPDX-License-Identifier: MIT
#include "backends/emulated/spec_values.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace netio::emulated {
namespace {

template <typename T>
Parsed<T> fail(std::string message) {
  return Parsed<T>{std::variant<T, std::string>(std::in_place_index<1>, std::move(message))};
}
template <typename T>
Parsed<T> good(T value) {
  return Parsed<T>{std::variant<T, std::string>(std::in_place_index<0>, value)};
}

// Splits "12.5us" into its number and its unit.
std::pair<std::string_view, std::string_view> split_number(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    const bool exponent_sign = (c == '+' || c == '-') && i > 0 && (text[i - 1] == 'e' || text[i - 1] == 'E');
    const bool exponent =
        (c == 'e' || c == 'E') && i + 1 < text.size() &&
        (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' || text[i + 1] == '+');
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || (c == '-' && i == 0) || exponent_sign || exponent) {
      ++i;
      continue;
    }
    break;
  }
  return {text.substr(0, i), trim(text.substr(i))};
}

}  // namespace

std::string_view trim(std::string_view text) noexcept {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

Parsed<double> parse_number(std::string_view text) {
  text = trim(text);
  if (text.empty()) return fail<double>("a number is missing");
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return fail<double>(fmt::format("'{}' is not a number", text));
  }
  return good(value);
}

Parsed<double> parse_time_unit(std::string_view unit) {
  if (unit == "ns") return good(1.0);
  if (unit == "us" || unit == "\xC2\xB5s") return good(1e3);
  if (unit == "ms") return good(1e6);
  if (unit == "s") return good(1e9);
  return fail<double>(fmt::format("'{}' is not a time unit (ns, us, ms, s)", unit));
}

Parsed<double> parse_duration_ns(std::string_view text) {
  text = trim(text);
  const auto [number_text, unit] = split_number(text);
  const auto number = parse_number(number_text);
  if (!number.ok()) return fail<double>(fmt::format("'{}' is not a duration (e.g. 50us, 1.5ms, 2s)", text));
  if (number.value() < 0) return fail<double>(fmt::format("'{}' is negative: a duration is at least 0", text));
  if (unit.empty()) {
    if (number.value() == 0) return good(0.0);
    return fail<double>(fmt::format("'{}' has no unit (write e.g. {}us or {}ms)", text, number_text, number_text));
  }
  const auto per_unit = parse_time_unit(unit);
  if (!per_unit.ok()) return fail<double>(fmt::format("'{}': {}", text, per_unit.error()));
  return good(number.value() * per_unit.value());
}

Parsed<std::uint64_t> parse_size(std::string_view text) {
  text = trim(text);
  const auto [number_text, unit] = split_number(text);
  const auto number = parse_number(number_text);
  if (!number.ok() || number.value() < 0) {
    return fail<std::uint64_t>(fmt::format("'{}' is not a size (e.g. 64KiB, 1MiB, 4096)", text));
  }
  double multiple = 0;
  if (unit.empty() || unit == "B")
    multiple = 1;
  else if (unit == "K" || unit == "KiB")
    multiple = 1024.0;
  else if (unit == "M" || unit == "MiB")
    multiple = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    multiple = 1024.0 * 1024 * 1024;
  else
    return fail<std::uint64_t>(fmt::format("'{}': '{}' is not a size unit (B, KiB, MiB, GiB)", text, unit));
  const double bytes = number.value() * multiple;
  if (bytes > 1e18 || bytes != std::floor(bytes)) {
    return fail<std::uint64_t>(fmt::format("'{}' is not a whole number of bytes", text));
  }
  return good(static_cast<std::uint64_t>(bytes));
}

Parsed<double> parse_rate(std::string_view text) {
  text = trim(text);
  const auto [number_text, unit] = split_number(text);
  const auto number = parse_number(number_text);
  if (!number.ok()) return fail<double>(fmt::format("'{}' is not a rate (e.g. 10Gbps, 500MB/s, 1GiB/s)", text));
  struct Unit {
    std::string_view name;
    double bytes_per_second;
  };
  static constexpr Unit units[] = {
      {"bps", 1.0 / 8},
      {"bit/s", 1.0 / 8},
      {"Kbps", 1e3 / 8},
      {"kbps", 1e3 / 8},
      {"Kbit/s", 1e3 / 8},
      {"Mbps", 1e6 / 8},
      {"Mbit/s", 1e6 / 8},
      {"Gbps", 1e9 / 8},
      {"Gbit/s", 1e9 / 8},
      {"Tbps", 1e12 / 8},
      {"Tbit/s", 1e12 / 8},
      {"B/s", 1},
      {"KB/s", 1e3},
      {"kB/s", 1e3},
      {"MB/s", 1e6},
      {"GB/s", 1e9},
      {"KiB/s", 1024.0},
      {"MiB/s", 1024.0 * 1024},
      {"GiB/s", 1024.0 * 1024 * 1024},
  };
  if (unit.empty()) {
    return fail<double>(fmt::format("'{}' has no unit (bits: bps, Kbps, Mbps, Gbps; bytes: B/s, MB/s, GiB/s)", text));
  }
  for (const Unit& u : units) {
    if (u.name == unit) {
      if (number.value() <= 0) return fail<double>(fmt::format("'{}': a rate must be above 0", text));
      return good(number.value() * u.bytes_per_second);
    }
  }
  return fail<double>(
      fmt::format("'{}': '{}' is not a rate unit (bits: bps, Kbps, Mbps, Gbps, Tbps; bytes: B/s, KB/s, MB/s, GB/s, "
                  "KiB/s, MiB/s, GiB/s)",
                  text, unit));
}

Parsed<double> parse_fraction(std::string_view text) {
  text = trim(text);
  double value = 0;
  if (!text.empty() && text.back() == '%') {
    const auto number = parse_number(text.substr(0, text.size() - 1));
    if (!number.ok()) return fail<double>(fmt::format("'{}' is not a percentage", text));
    value = number.value() / 100;
  } else {
    const auto number = parse_number(text);
    if (!number.ok())
      return fail<double>(fmt::format("'{}' is not a percentage (e.g. 25%) or a fraction (0.25)", text));
    value = number.value();
  }
  if (value < 0 || value > 1) return fail<double>(fmt::format("'{}' is outside 0 … 100 %", text));
  return good(value);
}

Parsed<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t max) {
  text = trim(text);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > max) {
    return fail<std::uint64_t>(fmt::format("'{}' is not an integer from 0 to {}", text, max));
  }
  return good(value);
}

std::string format_rate(double bytes_per_second) {
  const double bits = bytes_per_second * 8;
  if (bits >= 1e9) return fmt::format("{:.4g} Gb/s", bits / 1e9);
  if (bits >= 1e6) return fmt::format("{:.4g} Mb/s", bits / 1e6);
  if (bits >= 1e3) return fmt::format("{:.4g} Kb/s", bits / 1e3);
  return fmt::format("{:.4g} b/s", bits);
}

}  // namespace netio::emulated
