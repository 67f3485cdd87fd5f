// SPDX-License-Identifier: MIT
// A small JSON writer for the tools' --json output: one document, written front to back.
//
//   JsonWriter json;
//   json.begin_object().field("size", 64).key("rtt_us").begin_object()...end_object().end_object();
//   fmt::print("{}\n", json.str());
//
// Commas are placed automatically. Non-finite doubles (NaN, inf) become null, since JSON
// has no spelling for them. Misuse (a value where a key is due, unbalanced ends, a second
// top-level value) throws std::logic_error: it is a bug in the tool, not a run-time error.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netio::tools {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(bool flag);
  JsonWriter& value(double number);
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(std::uint64_t number);
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter& value(T number) {
    if constexpr (std::is_signed_v<T>)
      return value(static_cast<std::int64_t>(number));
    else
      return value(static_cast<std::uint64_t>(number));
  }
  template <typename T>
  JsonWriter& value(const std::optional<T>& maybe) {
    return maybe ? value(*maybe) : null();
  }
  JsonWriter& null();

  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  // The document; throws std::logic_error while objects or arrays are still open.
  const std::string& str() const;

  static std::string escape(std::string_view text);

 private:
  enum class Scope { object, array };
  struct Level {
    Scope scope;
    bool empty = true;
    bool key_pending = false;  // objects: a key was written, its value is due
  };
  void before_value();
  void raw(std::string_view text);

  std::string out_;
  std::vector<Level> stack_;
  bool done_ = false;  // the top-level value is complete
};

}  // namespace netio::tools
