// SPDX-License-Identifier: MIT
#include "units.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <optional>
#include <utility>

namespace netio::tools {
namespace {

using u64 = std::uint64_t;
__extension__ using u128 = unsigned __int128;  // a GCC/Clang extension; -Wpedantic knows it

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A decimal number split into its exact parts, so that "1.5KiB" needs no floating point:
// value = integer + fraction / 10^fraction_digits.
struct Decimal {
  u64 integer = 0;
  u64 fraction = 0;
  u64 fraction_scale = 1;  // 10^digits of the fraction
};

struct NumberAndUnit {
  Decimal number;
  std::string unit;       // lower case, spaces around it removed
  std::string unit_text;  // as typed, for messages
};

// Parses "<digits>[.<digits>][ ]<unit>"; the error names what is wrong, not the input
// (the caller quotes it).
std::variant<NumberAndUnit, std::string> split_number(std::string_view text) {
  NumberAndUnit result;
  std::size_t i = 0;
  bool any_digit = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    any_digit = true;
    if (__builtin_mul_overflow(result.number.integer, u64{10}, &result.number.integer) ||
        __builtin_add_overflow(result.number.integer, u64(text[i] - '0'), &result.number.integer)) {
      return std::string("the number is too large");
    }
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      any_digit = true;
      if (result.number.fraction_scale >= u64{1'000'000'000'000'000}) continue;  // beyond ns precision
      result.number.fraction = result.number.fraction * 10 + u64(text[i] - '0');
      result.number.fraction_scale *= 10;
    }
  }
  if (!any_digit) {
    if (text.size() > 1 && text[0] == '-' && std::isdigit(static_cast<unsigned char>(text[1])))
      return std::string("it must not be negative");
    return std::string("it does not start with a number");
  }
  result.unit_text = std::string(trim(text.substr(i)));
  result.unit = lower(result.unit_text);
  return result;
}

// number × multiplier, exactly; nullopt on overflow. `remainder` receives the part of the
// fraction that does not make a whole unit (numerator over fraction_scale).
std::optional<u64> scale(const Decimal& number, u64 multiplier, u64& remainder) {
  u64 whole = 0;
  if (__builtin_mul_overflow(number.integer, multiplier, &whole)) return std::nullopt;
  // fraction < fraction_scale <= 10^18 and multiplier <= 3.6e12 (ns per hour): use 128 bits.
  const u128 product = static_cast<u128>(number.fraction) * multiplier;
  const u128 fraction_whole = product / number.fraction_scale;
  remainder = static_cast<u64>(product % number.fraction_scale);
  if (fraction_whole > ~u64{0} || __builtin_add_overflow(whole, static_cast<u64>(fraction_whole), &whole)) {
    return std::nullopt;
  }
  return whole;
}

struct Unit {
  std::string_view name;
  u64 multiplier;
};

constexpr std::array size_units{
    Unit{"", 1},
    Unit{"b", 1},
    Unit{"k", u64{1} << 10},
    Unit{"kib", u64{1} << 10},
    Unit{"m", u64{1} << 20},
    Unit{"mib", u64{1} << 20},
    Unit{"g", u64{1} << 30},
    Unit{"gib", u64{1} << 30},
};

constexpr std::array duration_units{
    Unit{"", 1'000'000'000},
    Unit{"ns", 1},
    Unit{"us", 1'000},
    Unit{"\xc2\xb5s", 1'000},  // µs in UTF-8
    Unit{"ms", 1'000'000},
    Unit{"s", 1'000'000'000},
    Unit{"m", 60'000'000'000},
    Unit{"min", 60'000'000'000},
    Unit{"h", 3'600'000'000'000},
};

template <std::size_t N>
const Unit* find_unit(const std::array<Unit, N>& units, std::string_view name) {
  for (const Unit& unit : units) {
    if (unit.name == name) return &unit;
  }
  return nullptr;
}

}  // namespace

ParseResult<u64> parse_size(std::string_view text) {
  const std::string_view trimmed = trim(text);
  auto fail = [&](std::string_view why) {
    return ParseResult<u64>::failure(fmt::format("'{}' is not a size: {} (examples: 64, 4KiB, 1MiB, 1GiB)", text, why));
  };
  auto split = split_number(trimmed);
  if (auto* error = std::get_if<std::string>(&split)) return fail(*error);
  const auto& [number, unit_name, unit_text] = std::get<NumberAndUnit>(split);
  if (unit_name == "kb" || unit_name == "mb" || unit_name == "gb") {
    return fail(fmt::format("'{}' is ambiguous (1000 or 1024?); write {}iB or the number of bytes", unit_text,
                            static_cast<char>(std::toupper(unit_name[0]))));
  }
  const Unit* unit = find_unit(size_units, unit_name);
  if (unit == nullptr) return fail(fmt::format("unknown unit '{}' (use B, KiB, MiB or GiB)", unit_text));
  u64 remainder = 0;
  const auto bytes = scale(number, unit->multiplier, remainder);
  if (!bytes) return fail("it is too large");
  if (remainder != 0) return fail("it is not a whole number of bytes");
  return *bytes;
}

ParseResult<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  const std::string_view trimmed = trim(text);
  auto fail = [&](std::string_view why) {
    return ParseResult<std::chrono::nanoseconds>::failure(
        fmt::format("'{}' is not a duration: {} (examples: 10us, 500ms, 2s, 1m)", text, why));
  };
  auto split = split_number(trimmed);
  if (auto* error = std::get_if<std::string>(&split)) return fail(*error);
  const auto& [number, unit_name, unit_text] = std::get<NumberAndUnit>(split);
  const Unit* unit = find_unit(duration_units, unit_name);
  if (unit == nullptr) return fail(fmt::format("unknown unit '{}' (use ns, us, ms, s, m or h)", unit_text));
  u64 remainder = 0;
  auto nanoseconds = scale(number, unit->multiplier, remainder);
  if (nanoseconds && remainder * 2 >= number.fraction_scale) ++*nanoseconds;  // round half up
  constexpr u64 max_nanoseconds_value = static_cast<u64>(std::chrono::nanoseconds::max().count());
  if (!nanoseconds || *nanoseconds > max_nanoseconds_value) return fail("it is too long");
  return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(*nanoseconds));
}

std::string format_size(u64 bytes) {
  constexpr std::array<std::string_view, 4> unit_names{"B", "KiB", "MiB", "GiB"};
  std::size_t unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024.0 && unit + 1 < unit_names.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.4g} {}", value, unit_names[unit]);
}

std::string format_size_compact(u64 bytes) {
  constexpr std::array<std::pair<u64, std::string_view>, 3> unit_names{
      {{u64{1} << 30, "GiB"}, {u64{1} << 20, "MiB"}, {u64{1} << 10, "KiB"}}};
  for (const auto& [multiplier, name] : unit_names) {
    if (bytes != 0 && bytes % multiplier == 0) return fmt::format("{}{}", bytes / multiplier, name);
  }
  return fmt::format("{}", bytes);
}

std::string format_duration(std::chrono::nanoseconds duration) {
  const u64 ns = static_cast<u64>(duration.count() < 0 ? 0 : duration.count());
  constexpr std::array<std::pair<u64, std::string_view>, 5> unit_names{
      {{3'600'000'000'000, "h"}, {60'000'000'000, "m"}, {1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}}};
  if (ns == 0) return "0s";
  for (const auto& [multiplier, name] : unit_names) {
    if (ns % multiplier == 0) return fmt::format("{}{}", ns / multiplier, name);
  }
  for (const auto& [multiplier, name] : unit_names) {
    // Not a whole number of any unit: the largest unit it reaches, with a fraction.
    if (ns >= multiplier) return fmt::format("{}{}", static_cast<double>(ns) / static_cast<double>(multiplier), name);
  }
  return fmt::format("{}ns", ns);
}

}  // namespace netio::tools
