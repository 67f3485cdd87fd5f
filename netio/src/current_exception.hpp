// SPDX-License-Identifier: MIT
// What the exception being handled says, for a log line: its what() when it is a
// std::exception, otherwise that it is not one. Call only inside a catch block. Used where
// netio calls user code (handlers, events, tasks, timers) and must survive whatever it
// throws: the loop thread never dies of a user's exception.
#pragma once

#include <exception>
#include <string>

namespace netio::detail {

inline std::string current_exception_text() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace netio::detail
