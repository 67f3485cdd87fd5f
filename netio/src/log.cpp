// SPDX-License-Identifier: MIT
#include "log_line.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
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

// The sink set by set_log_sink(); null: stderr. Copied out under the lock and called
// without it, so a sink may log, or replace itself, without a deadlock.
struct SinkHolder {
  std::mutex mutex;
  std::shared_ptr<const LogSink> sink;  // guarded by mutex
};

SinkHolder& sink_holder() noexcept {
  static SinkHolder holder;
  return holder;
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
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

LogLevel log_level() noexcept { return current_level().load(std::memory_order_relaxed); }
void set_log_level(LogLevel level) noexcept { current_level().store(level, std::memory_order_relaxed); }

void set_log_sink(LogSink sink) {
  auto next = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  auto& holder = sink_holder();
  std::shared_ptr<const LogSink> previous;
  {
    std::lock_guard lock(holder.mutex);
    previous = std::exchange(holder.sink, std::move(next));
  }
  // `previous` is destroyed here, outside the lock (or by the last line still using it).
}

std::string format_log_line(LogLevel level, std::string_view message, std::chrono::system_clock::time_point when) {
  // Seconds and microseconds apart: fmt's %S would print the fraction in the clock's own
  // precision (nanoseconds on Linux).
  const auto since_epoch = std::chrono::duration_cast<std::chrono::microseconds>(when.time_since_epoch());
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
  const auto micros = (since_epoch - seconds).count();
  const std::time_t time = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  gmtime_r(&time, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z netio {}: {}\n", utc, micros, to_string(level), message);
}

void log_write(LogLevel level, std::string_view message) noexcept {
  try {
    std::shared_ptr<const LogSink> sink;
    {
      auto& holder = sink_holder();
      std::lock_guard lock(holder.mutex);
      sink = holder.sink;
    }
    if (sink) {
      (*sink)(level, message);
      return;
    }
    // One fwrite per message keeps lines from different threads whole.
    const std::string line = format_log_line(level, message, std::chrono::system_clock::now());
    std::fwrite(line.data(), 1, line.size(), stderr);
  } catch (...) {
    // Logging must never take the program down (nor a sink that throws).
  }
}

}  // namespace netio
