// SPDX-License-Identifier: MIT
// Logging through fmt to stderr. The level comes from the environment variable NETIO_LOG
// (trace, debug, info, warn, error, off; default warn), read once.
// Thread-safe: each message is written with one call.
#pragma once

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace netio {

enum class LogLevel { trace, debug, info, warn, error, off };

LogLevel log_level() noexcept;
void set_log_level(LogLevel level) noexcept;  // overrides NETIO_LOG, e.g. for tools' --verbose
void log_write(LogLevel level, std::string_view message) noexcept;

inline bool log_enabled(LogLevel level) noexcept { return level >= log_level() && level != LogLevel::off; }

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(level)) log_write(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace netio
