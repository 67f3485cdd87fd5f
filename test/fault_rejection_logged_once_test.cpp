// SPDX-License-Identifier: MIT
// A rejected connection is logged once on each side, whatever the back-end: the receiver says
// whom it rejected and why, the sender's socket says it was rejected; nobody repeats it.
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/transports.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace std::chrono_literals;

namespace {

// What the process writes to stderr (netio's log) while it lives.
class CapturedStderr {
 public:
  CapturedStderr() : file_(std::tmpfile()), saved_(::dup(2)) {
    std::fflush(stderr);
    ::dup2(::fileno(file_), 2);
  }
  ~CapturedStderr() { restore(); }
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;
  std::string text() {
    restore();
    std::string all;
    std::rewind(file_);
    char buffer[4096];
    while (const auto n = std::fread(buffer, 1, sizeof buffer, file_)) all.append(buffer, n);
    return all;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("a rejected connection is logged once on each side", "[faults][integration]") {
  const auto base = netio::Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const auto level = netio::log_level();
  netio::set_log_level(netio::LogLevel::warn);
  std::string log;
  {
    CapturedStderr captured;
    {
      netio::Context context;
      netio::HighThroughputReceiveSocket receiver(context, base);
      netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
      CHECK_THROWS_AS(sender.wait_connected(10s), netio::Error);
    }
    log = captured.text();
  }
  netio::set_log_level(level);
  INFO(log);
  // The receiver: "rejecting <peer>: the peer is a low-latency send socket, but ...".
  CHECK(count(log, "rejecting ") == 1);
  // The sender: "... rejected the connection: the peer is a low-latency send socket, ...".
  CHECK(count(log, "rejected the connection") == 1);
}
