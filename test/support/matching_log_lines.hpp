// SPDX-License-Identifier: MIT
// Counts the lines netio logs (at warn and above) that contain a needle, while it lives: for
// tests that a misbehaving peer is logged once. Takes netio's log sink and level for its
// lifetime and restores stderr and the level after; one at a time per process.
#pragma once

#include "netio/log.hpp"

#include <atomic>
#include <string>
#include <string_view>
#include <utility>

namespace netio::test {

class MatchingLogLines {
 public:
  explicit MatchingLogLines(std::string needle) : needle_(std::move(needle)), level_before_(netio::log_level()) {
    netio::set_log_level(netio::LogLevel::warn);
    netio::set_log_sink([this](netio::LogLevel, std::string_view message) {
      if (message.find(needle_) != std::string_view::npos) ++count_;
    });
  }
  ~MatchingLogLines() {
    netio::set_log_sink({});
    netio::set_log_level(level_before_);
  }
  MatchingLogLines(const MatchingLogLines&) = delete;
  MatchingLogLines& operator=(const MatchingLogLines&) = delete;
  int count() const { return count_.load(); }

 private:
  std::string needle_;
  netio::LogLevel level_before_;
  std::atomic<int> count_{0};
};

}  // namespace netio::test
