// SPDX-License-Identifier: MIT
// The line netio writes on stderr when no sink is set (netio/log.hpp): an ISO 8601 time in
// UTC with microseconds, the level and the message, e.g.
//   2026-11-29T00:31:02.123456Z netio warn: tcp://127.0.0.1:5000: ...
#pragma once

#include "netio/log.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace netio {

std::string format_log_line(LogLevel level, std::string_view message, std::chrono::system_clock::time_point when);

}  // namespace netio
