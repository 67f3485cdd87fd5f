// SPDX-License-Identifier: MIT
// netio_tsbench's BenchConfig: the receive buffer derived from --credits (16 per
// input–compute pair unless given) or taken from --buffer-size, never both, and never with
// fewer than 2 credits per pair.
#include "tsbench/bench_config.hpp"

#include "netio/error.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace netio::tools::tsbench;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

BenchConfig system_of(std::uint32_t inputs, std::uint32_t computes) {
  BenchConfig b;
  b.inputs = inputs;
  b.computes = computes;
  return b;
}

// The message of the netio::Error (Errc::invalid_option) resolve() throws; fails when it does not.
std::string refusal(BenchConfig b) {
  try {
    b.resolve();
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    return e.what();
  }
  FAIL("resolved, buffer " << b.buffer_bytes);
  return {};
}

}  // namespace

TEST_CASE("tsbench config: the buffer derived from 16 credits per pair by default", "[tsbench]") {
  auto b = system_of(4, 4);
  CHECK(b.buffer_bytes == 0);  // not sized before resolve()
  CHECK_THROWS_WITH(b.validate(), Catch::Contains("not sized yet"));
  b.resolve();
  CHECK(b.buffer_bytes == 1 * MiB);  // 16 × 4 × 16 KiB: the 4 × 4 figures are unchanged
  CHECK(b.credits_per_pair() == 16);

  auto wide = system_of(48, 48);
  wide.resolve();
  CHECK(wide.buffer_bytes == 12 * MiB);  // 16 × 48 × 16 KiB
  CHECK(wide.credits_per_pair() == 16);

  auto two = system_of(3, 2);
  two.contribution_bytes = 4 * KiB;
  two.credits = 2;
  two.resolve();
  CHECK(two.buffer_bytes == 2 * 3 * 4 * KiB);
  CHECK(two.credits_per_pair() == 2);
  two.resolve();  // again: the same
  CHECK(two.buffer_bytes == 2 * 3 * 4 * KiB);
}

TEST_CASE("tsbench config: a role run derives the buffer from the cluster's input count", "[tsbench]") {
  // main() leaves a role run's config unresolved; run_role() sets the counts of the cluster
  // file and resolves: the buffer is the one a local run of that size derives.
  auto given = system_of(4, 4);  // the command line's defaults
  given.credits = 3;
  auto role = given;
  role.inputs = 10;
  role.computes = 2;
  role.resolve();
  CHECK(role.buffer_bytes == 3 * 10 * 16 * KiB);
  auto local = system_of(10, 2);
  local.credits = 3;
  local.resolve();
  CHECK(local.buffer_bytes == role.buffer_bytes);
}

TEST_CASE("tsbench config: an explicit --buffer-size is kept, its credits follow", "[tsbench]") {
  auto b = system_of(3, 2);
  b.contribution_bytes = 4 * KiB;
  b.buffer_bytes = 256 * KiB;
  b.resolve();
  CHECK(b.buffer_bytes == 256 * KiB);
  CHECK(b.credits_per_pair() == 21);  // 256 KiB / 3 / 4 KiB
}

TEST_CASE("tsbench config: fewer than 2 credits per pair are refused, saying how many, why and what instead",
          "[tsbench]") {
  SECTION("the 1 MiB buffer at 48 inputs") {
    auto b = system_of(48, 48);
    b.buffer_bytes = 1 * MiB;
    const auto what = refusal(b);
    CHECK_THAT(what, Catch::StartsWith("--buffer-size 1MiB (1 MiB / 48 inputs / 16 KiB contributions) gives 1 credit "
                                       "per input–compute pair; at least 2 are needed"));
    CHECK_THAT(what, Catch::Contains("every send waits a full round trip for its credit"));
    CHECK_THAT(what, Catch::Contains("give --buffer-size 1536KiB or more, or --credits 2 instead (without either: "
                                     "--credits 16, a 12 MiB buffer)"));
  }
  SECTION("just enough for 2") {
    auto b = system_of(48, 48);
    b.buffer_bytes = 2 * 48 * 16 * KiB;
    b.resolve();
    CHECK(b.credits_per_pair() == 2);
  }
  SECTION("--credits 1") {
    auto b = system_of(4, 4);
    b.credits = 1;
    const auto what = refusal(b);
    CHECK_THAT(what, Catch::StartsWith("--credits 1 gives 1 credit per input–compute pair"));
    CHECK_THAT(what, Catch::EndsWith("give --credits 2 or more"));
  }
  SECTION("--credits 0") {
    auto b = system_of(4, 4);
    b.credits = 0;
    CHECK_THAT(refusal(b), Catch::StartsWith("--credits 0 gives 0 credits per input–compute pair"));
  }
  SECTION("--credits and a --buffer-size that disagree") {
    auto b = system_of(4, 4);
    b.credits = 4;
    b.buffer_bytes = 1 * MiB;
    CHECK_THAT(refusal(b), Catch::Contains("--credits 4 and --buffer-size 1MiB both size the receive buffer"));
  }
}

TEST_CASE("tsbench config: the default interval is whole rounds, a given one must be", "[tsbench]") {
  // Not given: 1000 rounded down to whole rounds of M (as the engines did before they refused
  // a remainder), so that `--inputs 24 --computes 24` runs as it always did.
  auto b = system_of(24, 24);
  b.resolve();
  CHECK(b.interval_timeslices == 984);  // 41 rounds
  auto wide = system_of(4, 1500);
  wide.resolve();
  CHECK(wide.interval_timeslices == 1500);  // at least one round
  // Given: refused with what to give instead.
  auto given = system_of(24, 24);
  given.interval_timeslices = 1000;
  given.interval_given = true;
  const auto message = refusal(given);
  CHECK_THAT(message, Catch::Contains("--interval 1000 is not whole rounds of 24 compute nodes"));
  CHECK_THAT(message, Catch::Contains("give 984 or 1008"));
  given.interval_timeslices = 984;
  CHECK_NOTHROW(given.resolve());
}

TEST_CASE("tsbench config: --fail names a compute node and a moment", "[tsbench]") {
  using namespace std::chrono_literals;
  const auto spec = parse_fail_spec("compute:2,at=1.5s");
  CHECK(spec.compute == 2);
  CHECK(spec.at == 1500ms);
  for (const char* bad : {"compute:2", "node:2,at=1s", "compute:x,at=1s", "compute:2,at=soon", "compute:,at=1s"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_fail_spec(bad), netio::Error);
  }
  auto config = system_of(4, 4);
  config.resolve();
  config.fail = "compute:3,at=1s";
  CHECK_NOTHROW(config.validate());
  config.fail = "compute:4,at=1s";
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("compute node 4 out of range"));
}

TEST_CASE("tsbench config: two DDE replicas by default where there are two compute nodes, --dde-replicas within M",
          "[tsbench]") {
  CHECK(system_of(4, 4).dde_replica_count() == 2);  // compute node 0 may die: the replica on node 1 goes on
  CHECK(system_of(4, 1).dde_replica_count() == 1);
  auto config = system_of(4, 4);
  config.dde_replicas = 4;
  CHECK(config.dde_replica_count() == 4);
  config.resolve();
  for (const std::uint32_t bad : {0u, 5u}) {
    config.dde_replicas = bad;
    CHECK_THROWS_WITH(config.validate(), Catch::Contains("--dde-replicas " + std::to_string(bad)));
  }
}

TEST_CASE("tsbench config: --join 'input,at=T' keeps input N-1 on standby, one change per run, 2 inputs at least",
          "[tsbench]") {
  using namespace std::chrono_literals;
  auto config = system_of(3, 3);
  config.resolve();
  config.join = "input,at=1.5s";
  CHECK_NOTHROW(config.validate());
  CHECK(config.join_at() == std::optional<std::chrono::nanoseconds>(1500ms));
  CHECK(config.standby_input() == std::optional<std::uint32_t>(2));
  CHECK_FALSE(config.standby_slot().has_value());  // every compute slot a member
  config.join = "compute,at=1s";
  CHECK(config.standby_slot() == std::optional<std::uint32_t>(2));
  CHECK_FALSE(config.standby_input().has_value());
  config.join = "input,at=1s";
  config.drain = "compute:1,at=1s";
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("one change per run"));
  config.drain.clear();
  config.join = "input,at=soon";
  CHECK_THROWS_AS(config.validate(), netio::Error);
  auto one = system_of(1, 3);
  one.resolve();
  one.join = "input,at=1s";
  CHECK_THROWS_WITH(one.validate(), Catch::Contains("at least 2 inputs"));
}
