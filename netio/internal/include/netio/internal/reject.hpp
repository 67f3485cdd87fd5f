// SPDX-License-Identifier: MIT
// The one way netio's sources refuse a value: a netio::Error with the code and a message
// "subject: what" (the subject names the thing refused, e.g. "scheduler config",
// "DFS proposal"). Each source names its subject once:
//   constexpr detail::Rejecter reject{Errc::invalid_option, "scheduler config"};
//   if (c.inputs == 0) reject("inputs is 0");
#pragma once

#include "netio/error.hpp"

#include <string>
#include <string_view>

namespace netio::detail {

// Throws Error(code, "subject: what"), or Error(code, "what") when the subject is empty.
[[noreturn]] inline void reject(Errc code, std::string_view subject, std::string_view what) {
  std::string message;
  if (!subject.empty()) {
    message.reserve(subject.size() + 2 + what.size());
    message.append(subject).append(": ");
  }
  message.append(what);
  throw Error(code, message);
}

// reject() with its code and subject bound, for a source that refuses one kind of thing.
class Rejecter {
 public:
  constexpr Rejecter(Errc code, std::string_view subject) noexcept : code_(code), subject_(subject) {}
  [[noreturn]] void operator()(std::string_view what) const { reject(code_, subject_, what); }

 private:
  Errc code_;
  std::string_view subject_;
};

}  // namespace netio::detail
