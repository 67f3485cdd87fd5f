// SPDX-License-Identifier: MIT
/// @file
/// netio's log: where its lines go and which of them are written.
///
/// By default every line at or above the level goes to stderr as
/// "[SECONDS.MICROS] netio LEVEL: MESSAGE". The level comes from the environment variable
/// NETIO_LOG (trace, debug, info, warn, error, off; default warn), read once, on first use;
/// set_log_level() overrides it. An application that has a logger of its own routes netio's
/// lines there with set_log_sink(): the sink then receives each line's level and message
/// (no time stamp, no prefix) instead of stderr.
///
/// Thread-safety: every function may be called from any thread at any time, also while other
/// threads log. The sink is called on the thread that logs (a user thread or the event-loop
/// thread), by several threads at once: it must be thread-safe, must not block for long
/// (the loop waits), and must not call into netio sockets. It may call set_log_sink() and
/// set_log_level(). An exception thrown by the sink is swallowed (the line is lost).
/// Replacing the sink: a line being written at that moment may still go to the old sink;
/// the old one is destroyed once no call uses it.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string_view>
#include <utility>

namespace netio {

enum class LogLevel { trace, debug, info, warn, error, off };

/// "trace", "debug", "info", "warn", "error", "off".
std::string_view to_string(LogLevel level) noexcept;

/// Receives a line netio logs: its level (never off) and its text (valid during the call).
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

/// Lines below this level are not formatted nor written.
LogLevel log_level() noexcept;
/// Overrides NETIO_LOG (e.g. for a tool's --verbose). LogLevel::off writes nothing.
void set_log_level(LogLevel level) noexcept;
/// Routes every line netio writes to `sink` instead of stderr; an empty sink restores stderr.
void set_log_sink(LogSink sink);

/// Writes `message` at `level` to the sink (or stderr), whatever the level set. Never throws.
void log_write(LogLevel level, std::string_view message) noexcept;

inline bool log_enabled(LogLevel level) noexcept { return level >= log_level() && level != LogLevel::off; }

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(level)) log_write(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace netio
