// SPDX-License-Identifier: MIT
// The log sink: an application takes netio's lines (set_log_sink) and sets the level.
#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/error.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"

#include "log_line.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct Line {
  netio::LogLevel level;
  std::string message;
};

// Collects lines; restores stderr and the level at the end of the test.
class CollectingSink {
 public:
  CollectingSink() : saved_level_(netio::log_level()) {
    netio::set_log_sink([this](netio::LogLevel level, std::string_view message) {
      std::lock_guard lock(mutex_);
      lines_.push_back({level, std::string(message)});
    });
  }
  ~CollectingSink() {
    netio::set_log_sink({});
    netio::set_log_level(saved_level_);
  }
  CollectingSink(const CollectingSink&) = delete;
  CollectingSink& operator=(const CollectingSink&) = delete;

  std::vector<Line> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  netio::LogLevel saved_level_;
  mutable std::mutex mutex_;
  std::vector<Line> lines_;
};

}  // namespace

TEST_CASE("set_log_sink routes netio's lines to the application, filtered by the level", "[log]") {
  CollectingSink sink;
  netio::set_log_level(netio::LogLevel::info);
  netio::log(netio::LogLevel::debug, "not written: below the level ({})", 1);
  netio::log(netio::LogLevel::info, "written at info ({})", 2);
  netio::log(netio::LogLevel::error, "written at error");
  netio::set_log_level(netio::LogLevel::off);
  netio::log(netio::LogLevel::error, "not written: the level is off");

  const auto lines = sink.lines();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].level == netio::LogLevel::info);
  CHECK(lines[0].message == "written at info (2)");  // the message alone: no time stamp, no prefix
  CHECK(lines[1].level == netio::LogLevel::error);
  CHECK(lines[1].message == "written at error");
  CHECK(netio::to_string(netio::LogLevel::warn) == "warn");
}

TEST_CASE("the log sink receives what the library itself logs", "[log]") {
  CollectingSink sink;
  netio::set_log_level(netio::LogLevel::warn);
  {
    netio::Context context;
    // A low-latency sender to a high-throughput receiver: rejected, and both sides log it.
    netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"));
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
    CHECK_THROWS_AS(sender.wait_connected(10s), netio::Error);
  }
  const auto library_lines = sink.lines();
  const auto rejecting = std::count_if(library_lines.begin(), library_lines.end(), [](const Line& line) {
    return line.level == netio::LogLevel::warn && line.message.find("rejecting ") != std::string::npos;
  });
  CHECK(rejecting == 1);
  netio::log(netio::LogLevel::warn, "a line of the test");
  const auto lines = sink.lines();
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.back().message == "a line of the test");
}

TEST_CASE("the log sink is thread-safe: lines from many threads while the sink is replaced", "[log]") {
  const auto saved_level = netio::log_level();
  netio::set_log_level(netio::LogLevel::info);
  std::atomic<std::uint64_t> first{0};
  std::atomic<std::uint64_t> second{0};
  std::atomic<bool> stop{false};
  netio::set_log_sink([&first](netio::LogLevel, std::string_view) { ++first; });  // before the writers start
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&stop, t] {
      while (!stop.load()) netio::log(netio::LogLevel::info, "writer {}", t);
    });
  }
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  for (int round = 0; round < 200 || ((first == 0 || second == 0) && std::chrono::steady_clock::now() < give_up);
       ++round) {
    if (round % 2 == 0) {
      netio::set_log_sink([&first](netio::LogLevel, std::string_view) { ++first; });
    } else {
      netio::set_log_sink([&second](netio::LogLevel, std::string_view) { ++second; });
    }
    std::this_thread::sleep_for(100us);
  }
  // A sink that throws loses its line and nothing else.
  netio::set_log_sink([](netio::LogLevel, std::string_view) { throw std::runtime_error("sink failed"); });
  std::this_thread::sleep_for(1ms);
  stop = true;
  for (auto& writer : writers) writer.join();
  netio::set_log_sink({});
  netio::set_log_level(saved_level);
  CHECK(first > 0);
  CHECK(second > 0);
}

TEST_CASE("netio's own stderr line begins with an ISO 8601 time in UTC with microseconds", "[log]") {
  // 2026-11-29T00:31:02.123456Z, written as epoch seconds and microseconds.
  const std::chrono::system_clock::time_point when{std::chrono::seconds(1795912262) +
                                                   std::chrono::microseconds(123456)};
  CHECK(netio::format_log_line(netio::LogLevel::warn, "the message", when) ==
        "2026-11-29T00:31:02.123456Z netio warn: the message\n");
  // Leading zeros kept in the fraction: 7 us is .000007, not .7.
  CHECK(netio::format_log_line(netio::LogLevel::error, "x",
                               std::chrono::system_clock::time_point{std::chrono::microseconds(7)}) ==
        "1970-01-01T00:00:00.000007Z netio error: x\n");
}
