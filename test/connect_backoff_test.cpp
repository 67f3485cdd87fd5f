// SPDX-License-Identifier: MIT
// The retry schedule of a connection not up yet (netio/src/connect_backoff.hpp): delays
// that double from 10 ms to 1 s within ±25 % jitter, the deadline, and which failed attempts
// are logged (the 1st, 2nd, 4th, 8th...).
#include "connect_backoff.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using netio::detail::ConnectBackoff;
using namespace std::chrono_literals;

TEST_CASE("connect back-off doubles from 10 ms to 1 s, each delay within 25 % jitter", "[connect_retry]") {
  const auto start = ConnectBackoff::Clock::now();
  const auto seed = GENERATE(1u, 2u, 0xdeadbeefu);
  ConnectBackoff backoff(start, std::chrono::nanoseconds::zero(), seed);
  std::chrono::nanoseconds step = 10ms;
  for (int attempt = 1; attempt <= 20; ++attempt) {
    const auto delay = backoff.next_delay(start + std::chrono::hours(attempt));  // no deadline: any time
    REQUIRE(delay);
    CHECK(*delay >= step * 3 / 4);
    CHECK(*delay <= step * 5 / 4);
    step = std::min<std::chrono::nanoseconds>(step * 2, 1s);
  }
  CHECK(backoff.attempts() == 20);
  CHECK_FALSE(backoff.remaining(start));
}

TEST_CASE("connect back-off ends at the deadline, the last delay cut to it", "[connect_retry]") {
  const auto start = ConnectBackoff::Clock::now();
  ConnectBackoff backoff(start, 100ms, 7);
  CHECK(*backoff.remaining(start) == 100ms);
  REQUIRE(backoff.next_delay(start + 5ms));
  const auto cut = backoff.next_delay(start + 95ms);  // 20 ms ± 25 % is more than the 5 ms left
  REQUIRE(cut);
  CHECK(*cut == 5ms);
  CHECK_FALSE(backoff.next_delay(start + 100ms));
  CHECK(backoff.attempts() == 3);
  CHECK(*backoff.remaining(start + 200ms) == std::chrono::nanoseconds::zero());
}

TEST_CASE("connect back-off logs the 1st, 2nd, 4th, 8th... failed attempt", "[connect_retry]") {
  const auto start = ConnectBackoff::Clock::now();
  ConnectBackoff backoff(start, std::chrono::nanoseconds::zero(), 3);
  CHECK_FALSE(backoff.worth_logging());  // nothing failed yet
  std::vector<std::uint64_t> logged;
  for (int attempt = 1; attempt <= 40; ++attempt) {
    (void)backoff.next_delay(start);
    if (backoff.worth_logging()) logged.push_back(backoff.attempts());
  }
  CHECK(logged == std::vector<std::uint64_t>{1, 2, 4, 8, 16, 32});
}
