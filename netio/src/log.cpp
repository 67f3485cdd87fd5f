// SPDX-License-Identifier: MIT
#include "netio/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace netio {
namespace {

LogLevel level_from_environment() noexcept {
  const char* value = std::getenv("NETIO_LOG");
  if (value == nullptr) return LogLevel::warn;
  const std::string_view text(value);
  if (text == "trace") return LogLevel::trace;
  if (text == "debug") return LogLevel::debug;
  if (text == "info") return LogLevel::info;
  if (text == "warn" || text == "warning") return LogLevel::warn;
  if (text == "error") return LogLevel::error;
  if (text == "off" || text == "none") return LogLevel::off;
  std::fprintf(stderr, "netio: NETIO_LOG=%s is not one of trace, debug, info, warn, error, off; using warn\n", value);
  return LogLevel::warn;
}

std::atomic<LogLevel>& current_level() noexcept {
  static std::atomic<LogLevel> level{level_from_environment()};
  return level;
}

const char* name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::trace: return "trace";
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warn: return "warn";
    case LogLevel::error: return "error";
    case LogLevel::off: break;
  }
  return "off";
}

}  // namespace

LogLevel log_level() noexcept { return current_level().load(std::memory_order_relaxed); }
void set_log_level(LogLevel level) noexcept { current_level().store(level, std::memory_order_relaxed); }

void log_write(LogLevel level, std::string_view message) noexcept {
  try {
    const auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    // One fwrite per message keeps lines from different threads whole.
    const std::string line = fmt::format("[{:.6f}] netio {}: {}\n", now, name(level), message);
    std::fwrite(line.data(), 1, line.size(), stderr);
  } catch (...) {
    // Logging must never take the program down.
  }
}

}  // namespace netio
