// SPDX-License-Identifier: MIT
#include "json_writer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace netio::tools {

void JsonWriter::before_value() {
  if (done_) throw std::logic_error("JsonWriter: a second top-level value");
  if (stack_.empty()) return;
  Level& level = stack_.back();
  if (level.scope == Scope::object) {
    if (!level.key_pending) throw std::logic_error("JsonWriter: a value in an object needs a key first");
    level.key_pending = false;
  } else {
    if (!level.empty) out_ += ',';
    level.empty = false;
  }
}

void JsonWriter::raw(std::string_view text) {
  before_value();
  out_ += text;
  if (stack_.empty()) done_ = true;
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back({Scope::object});
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (stack_.empty() || stack_.back().scope != Scope::object || stack_.back().key_pending) {
    throw std::logic_error("JsonWriter: end_object() without a matching begin_object() or with a key unanswered");
  }
  stack_.pop_back();
  out_ += '}';
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back({Scope::array});
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (stack_.empty() || stack_.back().scope != Scope::array) {
    throw std::logic_error("JsonWriter: end_array() without a matching begin_array()");
  }
  stack_.pop_back();
  out_ += ']';
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (stack_.empty() || stack_.back().scope != Scope::object || stack_.back().key_pending) {
    throw std::logic_error("JsonWriter: key() outside an object or twice in a row");
  }
  Level& level = stack_.back();
  if (!level.empty) out_ += ',';
  level.empty = false;
  level.key_pending = true;
  out_ += escape(name);
  out_ += ':';
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  raw(escape(text));
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  raw(flag ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  // fmt's "{}" is the shortest text that reads back as the same double.
  if (!std::isfinite(number)) return null();
  raw(fmt::format("{}", number));
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number) {
  raw(fmt::format("{}", number));
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number) {
  raw(fmt::format("{}", number));
  return *this;
}

JsonWriter& JsonWriter::null() {
  raw("null");
  return *this;
}

const std::string& JsonWriter::str() const {
  if (!stack_.empty()) throw std::logic_error("JsonWriter: the document still has open objects or arrays");
  return out_;
}

std::string JsonWriter::escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        // Other control characters must be escaped; bytes >= 0x80 pass through (UTF-8).
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else
          out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace netio::tools
