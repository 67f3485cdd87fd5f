// SPDX-License-Identifier: MIT
// The median and average shared by the engines.
#include "netio/error.hpp"
#include "netio/scheduler/statistics.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace netio::scheduler;
using namespace std::chrono_literals;

TEST_CASE("scheduler statistics: median of odd and even counts", "[scheduler]") {
  CHECK(median(std::vector<Duration>{700ns}) == 700ns);
  CHECK(median(std::vector<Duration>{900ns, 500ns, 700ns}) == 700ns);
  // 500 600 | 700 900: (600 + 700) / 2
  CHECK(median(std::vector<Duration>{900ns, 600ns, 500ns, 700ns}) == 650ns);
  // 100 | 101: 100 + 1/2 rounds down to 100
  CHECK(median(std::vector<Duration>{101ns, 100ns}) == 100ns);
  CHECK(median(std::vector<double>{0.004, 0.0, 0.002}) == 0.002);
  CHECK(median(std::vector<double>{0.001, 0.002}) == Approx(0.0015));
  CHECK_THROWS_AS(median(std::vector<Duration>{}), netio::Error);
}

TEST_CASE("scheduler statistics: average of points in time, without overflow at large epochs", "[scheduler]") {
  const std::vector<Time> small{1000ns, 1300ns, 1600ns};
  CHECK(average(small) == 1300ns);
  // offsets 0 1 2 4 from 1000: 7 / 4 = 1 (towards the first)
  const std::vector<Time> rounded{1000ns, 1001ns, 1002ns, 1004ns};
  CHECK(average(rounded) == 1001ns);
  // four points near 9.2e18 ns: a plain sum would overflow int64
  const Time big{9'000'000'000'000'000'000};
  const std::vector<Time> large{big, big + 10ns, big + 20ns, big + 30ns};
  CHECK(average(large) == big + 15ns);
  CHECK_THROWS_AS(average(std::vector<Time>{}), netio::Error);
}
