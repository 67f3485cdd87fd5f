// SPDX-License-Identifier: MIT
// Unit tests of tools/common: parsing, statistics, JSON, CPU pinning and the benchmark
// message format (that --verify really finds lost, duplicated and corrupt messages).
#include "common/bench_message.hpp"
#include "common/checksum.hpp"
#include "common/cli_options.hpp"
#include "common/control_frame.hpp"
#include "common/cpu_affinity.hpp"
#include "common/deadline.hpp"
#include "common/json_writer.hpp"
#include "common/latency_stats.hpp"
#include "common/pingpong_protocol.hpp"
#include "common/run_tracker.hpp"
#include "common/sequence_tracker.hpp"
#include "common/throughput_result.hpp"
#include "common/units.hpp"
#include "support/invalid_option.hpp"

#include <catch2/catch.hpp>

#include <sched.h>

#include <cmath>
#include <limits>
#include <thread>

using namespace netio::tools;
using namespace std::chrono_literals;

TEST_CASE("sizes parse with binary units and reject ambiguous or bad input", "[tools][units]") {
  CHECK(parse_size("64").value() == 64);
  CHECK(parse_size("64B").value() == 64);
  CHECK(parse_size("4KiB").value() == 4096);
  CHECK(parse_size("4k").value() == 4096);
  CHECK(parse_size("4K").value() == 4096);
  CHECK(parse_size("1MiB").value() == 1048576);
  CHECK(parse_size("1m").value() == 1048576);
  CHECK(parse_size("1GiB").value() == 1073741824);
  CHECK(parse_size(" 2 MiB ").value() == 2097152);
  CHECK(parse_size("1.5KiB").value() == 1536);
  CHECK(parse_size("0").value() == 0);

  for (const char* bad :
       {"", "abc", "-1", "4KB", "1MB", "1.5", "0.5B", "4XiB", "KiB", "99999999999999999999", "17179869184GiB"}) {
    INFO(bad);
    const auto result = parse_size(bad);
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.error(), Catch::Contains("is not a size"));
    netio::test::check_invalid_option([&] { (void)result.value(); }, {bad});
  }
  CHECK_THAT(parse_size("4KB").error(), Catch::Contains("ambiguous"));
}

TEST_CASE("durations parse with units, a bare number is seconds", "[tools][units]") {
  CHECK(parse_duration("500ms").value() == 500ms);
  CHECK(parse_duration("2s").value() == 2s);
  CHECK(parse_duration("10us").value() == 10us);
  CHECK(parse_duration("10\xc2\xb5s").value() == 10us);
  CHECK(parse_duration("250ns").value() == 250ns);
  CHECK(parse_duration("1m").value() == 60s);
  CHECK(parse_duration("1min").value() == 60s);
  CHECK(parse_duration("1h").value() == 3600s);
  CHECK(parse_duration("1.5s").value() == 1500ms);
  CHECK(parse_duration("0.0000000015s").value() == 2ns);  // rounded half up
  CHECK(parse_duration("3").value() == 3s);
  CHECK(parse_duration("0").value() == 0s);

  for (const char* bad : {"", "s", "fast", "-1s", "5 parsecs", "1e3s", "1000000000h"}) {
    INFO(bad);
    const auto result = parse_duration(bad);
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.error(), Catch::Contains("is not a duration"));
  }
}

TEST_CASE("formatted sizes and durations read back", "[tools][units]") {
  for (std::uint64_t bytes : {0ULL, 8ULL, 1000ULL, 4096ULL, 1536ULL, 1048576ULL, 3ULL << 30}) {
    CHECK(parse_size(format_size_compact(bytes)).value() == bytes);
  }
  for (std::chrono::nanoseconds d : {0ns, 1ns, 10000ns, 500000000ns, 2000000000ns, 1500000000ns, 90000000000ns}) {
    INFO(format_duration(d));
    CHECK(parse_duration(format_duration(d)).value() == d);
  }
  CHECK(format_size(8) == "8 B");
  CHECK(format_size(4096) == "4 KiB");
  CHECK(format_size(1536 * 1024) == "1.5 MiB");
}

TEST_CASE("CLI11 options accept sizes, size lists and durations", "[tools][cli]") {
  CLI::App app{"test"};
  std::uint64_t page = 1 << 20;
  std::vector<std::uint64_t> sizes;
  std::chrono::nanoseconds flush = 2s;
  std::optional<std::chrono::nanoseconds> duration;
  add_size_option(app, "--page-size", page, "page");
  app.add_option("-s,--size", sizes, "sizes")->delimiter(',')->transform(size_transformer());
  add_duration_option(app, "--flush-timeout", flush, "flush");
  add_duration_option(app, "-t", duration, "time");

  SECTION("good input") {
    // CLI11 takes a vector of arguments in reverse order.
    app.parse(std::vector<std::string>{"10ms", "-t", "4KiB,8,1MiB", "-s", "256KiB", "--page-size"});
    CHECK(page == 256 * 1024);
    CHECK(sizes == std::vector<std::uint64_t>{4096, 8, 1048576});
    CHECK(flush == 2s);  // not given: default kept
    REQUIRE(duration);
    CHECK(*duration == 10ms);
  }
  SECTION("defaults are shown re-parsably in --help") {
    CHECK_THAT(app.help(), Catch::Contains("1MiB") && Catch::Contains("2s"));
  }
  SECTION("a bad size names the option and the input") {
    try {
      app.parse(std::vector<std::string>{"4,lots", "-s"});
      FAIL("no error");
    } catch (const CLI::ValidationError& e) {
      CHECK_THAT(e.what(), Catch::Contains("--size") && Catch::Contains("'lots' is not a size"));
    }
  }
  SECTION("a bad duration names the option and the input") {
    CHECK_THROWS_WITH(app.parse(std::vector<std::string>{"soon", "--flush-timeout"}),
                      Catch::Contains("--flush-timeout") && Catch::Contains("'soon' is not a duration"));
  }
}

TEST_CASE("the --cpu option accepts available CPUs and explains unavailable ones", "[tools][cpu]") {
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  int first = 0;
  while (!CPU_ISSET(first, &allowed)) ++first;

  CHECK_FALSE(cpu_unavailable_reason(first).has_value());
  REQUIRE(cpu_unavailable_reason(-1).has_value());
  CHECK_THAT(*cpu_unavailable_reason(-1), Catch::Contains("CPU -1 does not exist"));
  REQUIRE(cpu_unavailable_reason(CPU_SETSIZE + 3).has_value());
  CHECK_THAT(*cpu_unavailable_reason(CPU_SETSIZE + 3), Catch::Contains(allowed_cpus_text()));
  CHECK_THROWS_WITH(pin_current_thread(100000), Catch::Contains("CPU 100000"));

  // Pin a thread of its own, not the test runner's.
  std::thread([first] { CHECK_NOTHROW(pin_current_thread(first)); }).join();

  CLI::App app{"test"};
  CpuChoice cpus;
  add_cpu_option(app, cpus);
  app.parse(std::vector<std::string>{std::to_string(first), "--cpu"});
  CHECK(cpus.tool_thread == first);
  CHECK(cpus.loop_thread == first);
  CHECK_THROWS_WITH(app.parse(std::vector<std::string>{"99999", "--cpu"}), Catch::Contains("CPU 99999"));
  CHECK_THROWS_WITH(app.parse(std::vector<std::string>{"x", "--cpu"}), Catch::Contains("not a CPU number"));
}

TEST_CASE("latency statistics", "[tools][stats]") {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);  // unsorted on purpose
  const LatencyStats s = compute_latency_stats(samples);
  CHECK(s.count == 100);
  CHECK(s.min == 1);
  CHECK(s.max == 100);
  CHECK(s.median == Approx(50.5));
  CHECK(s.mean == Approx(50.5));
  CHECK(s.p90 == Approx(90.1));
  CHECK(s.p99 == Approx(99.01));
  CHECK(s.p999 == Approx(99.901));
  CHECK(s.stddev == Approx(std::sqrt((100.0 * 100.0 - 1) / 12)));

  const LatencyStats one = compute_latency_stats({7.5});
  CHECK(one.min == 7.5);
  CHECK(one.p999 == 7.5);
  CHECK(one.stddev == 0);
  netio::test::check_invalid_option([] { (void)compute_latency_stats({}); }, {"no samples"});
}

TEST_CASE("text histogram shows every bucket from min to max", "[tools][stats]") {
  std::vector<double> samples(1000, 12.0);
  samples.push_back(950.0);  // a lone outlier must stay visible
  const std::string text = text_histogram(samples, {10, 40});
  const auto lines = std::count(text.begin(), text.end(), '\n');
  CHECK(lines == 20);  // 10^1.0 .. 10^3.0 in tenths of a decade
  CHECK_THAT(text, Catch::Contains("1000") && Catch::Contains("99.90%") && Catch::Contains("0.10%"));
  CHECK_THAT(text, Catch::Contains("|#" + std::string(39, ' ') + "|"));
  CHECK(text_histogram({}).empty());
}

TEST_CASE("JSON writer", "[tools][json]") {
  JsonWriter json;
  json.begin_object()
      .field("size", 64)
      .field("neg", -3)
      .field("ratio", 0.5)
      .field("nan", std::numeric_limits<double>::quiet_NaN())
      .field("name", "a\"b\\c\nd\x01")
      .field("ok", true)
      .field("missing", std::optional<std::uint64_t>{})
      .key("list")
      .begin_array()
      .value(1)
      .begin_object()
      .end_object()
      .begin_array()
      .end_array()
      .end_array()
      .end_object();
  CHECK(json.str() ==
        R"({"size":64,"neg":-3,"ratio":0.5,"nan":null,"name":"a\"b\\c\nd\u0001","ok":true,"missing":null,)"
        R"("list":[1,{},[]]})");

  JsonWriter misuse;
  misuse.begin_object();
  CHECK_THROWS_AS(misuse.value(1), std::logic_error);  // no key
  CHECK_THROWS_AS(misuse.str(), std::logic_error);     // unbalanced
  CHECK_THROWS_AS(misuse.end_array(), std::logic_error);
  JsonWriter twice;
  twice.value(1);
  CHECK_THROWS_AS(twice.value(2), std::logic_error);
}

TEST_CASE("throughput results as JSON have exactly the contract's keys", "[tools][json]") {
  ThroughputResult verified{64, 1000, 64000, 0.5, Verification{1, 2, 3}, true};
  ThroughputResult unverified{8, 10, 80, 0.0, std::nullopt, false};
  std::vector results{verified, unverified};
  JsonWriter json;
  write_results_json(json, results, VerificationColumns::reported);
  CHECK(json.str() ==
        R"({"results":[{"size":64,"messages":1000,"bytes":64000,"seconds":0.5,"msgs_per_s":2000,"gbps":0.001024,)"
        R"("lost":1,"duplicated":2,"corrupt":3},{"size":8,"messages":10,"bytes":80,"seconds":0,"msgs_per_s":0,)"
        R"("gbps":0,"lost":null,"duplicated":null,"corrupt":null}]})");
  JsonWriter sender;
  write_results_json(sender, std::span(results).first(1), VerificationColumns::none);
  CHECK_THAT(sender.str(), !Catch::Contains("lost"));
  CHECK_THAT(results_table(results, VerificationColumns::reported),
             Catch::Contains("duplicated") && Catch::Contains("*"));
}

TEST_CASE("control frames round-trip and reject damage", "[tools][protocol]") {
  const ControlFrame frame{ControlKind::run_end, 3, 4096, 123456789};
  auto bytes = encode_control_frame(frame);
  CHECK(looks_like_control_frame(bytes));
  REQUIRE(decode_control_frame(bytes));
  CHECK(*decode_control_frame(bytes) == frame);
  for (std::size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    auto damaged = bytes;
    damaged[bit / 8] ^= std::byte{1} << (bit % 8);
    INFO("bit " << bit);
    CHECK_FALSE(decode_control_frame(damaged));
  }
  CHECK_FALSE(decode_control_frame(std::span(bytes).first(40)));
}

TEST_CASE("checksum is position-sensitive", "[tools][protocol]") {
  std::vector<std::byte> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i % 251);
  const auto sum = checksum64(data);
  std::vector<std::byte> shifted(data.begin() + 1, data.end());
  shifted.push_back(data.front());
  CHECK(checksum64(shifted) != sum);
  std::swap(data[0], data[32]);  // same words, other lanes
  CHECK(checksum64(data) != sum);
  CHECK(checksum64(std::span(data).first(999)) != checksum64(data));
}

namespace {

// Every message of one run plus its control frames, as a stream for RunTracker.
struct StreamBuilder {
  std::vector<std::vector<std::byte>> messages;

  void control(const ControlFrameBytes& frame) { messages.emplace_back(frame.begin(), frame.end()); }
  void data(DataMessageBuilder& builder, std::uint64_t sequence) {
    auto bytes = builder.stamp(sequence);
    messages.emplace_back(bytes.begin(), bytes.end());
  }
  // A clean run: RUN_BEGIN, data 0..count-1, RUN_END(count).
  void run(RunKey key, std::uint64_t count) {
    DataMessageBuilder builder(key);
    control(encode_run_begin(key, count));
    for (std::uint64_t s = 0; s < count; ++s) data(builder, s);
    control(encode_run_end(key, count));
  }
  std::vector<ThroughputResult> feed(RunTracker& tracker) const {
    for (const auto& m : messages) tracker.on_message(m);
    return tracker.finish();
  }
};

// A clock that advances 1 ms per reading, so seconds are deterministic and non-zero.
RunTracker::ClockFunction fake_clock() {
  auto t = std::make_shared<RunTracker::Clock::time_point>();
  return [t] { return *t += 1ms; };
}

}  // namespace

TEST_CASE("data messages verify at every size, and every single-bit flip is caught", "[tools][protocol]") {
  for (std::uint64_t size : {8, 9, 15, 16, 17, 48, 64, 1000, 4096}) {
    INFO("size " << size);
    const RunKey key{2, size};
    DataMessageBuilder builder(key);
    for (std::uint64_t sequence : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{77777}, max_sequence}) {
      auto message = builder.stamp(sequence);
      CHECK_FALSE(looks_like_control_frame(message));
      REQUIRE(verify_data_message(message, key, key.salt()) == sequence);
    }
    const auto original = builder.stamp(12345);
    std::vector<std::byte> copy(original.begin(), original.end());
    std::size_t missed = 0;
    for (std::size_t bit = 0; bit < copy.size() * 8; ++bit) {
      copy[bit / 8] ^= std::byte{1} << (bit % 8);
      if (verify_data_message(copy, key, key.salt())) ++missed;
      copy[bit / 8] ^= std::byte{1} << (bit % 8);
    }
    CHECK(missed == 0);
    // A message of another run with the same size is not accepted either.
    const RunKey other{3, size};
    CHECK_FALSE(verify_data_message(original, other, other.salt()));
  }
  netio::test::check_invalid_option([] { (void)DataMessageBuilder(RunKey{0, 7}); }, {"at least", "not 7"});
}

TEST_CASE("per-message payloads verify and catch stale payload bytes", "[tools][protocol]") {
  for (std::uint64_t size : {8, 12, 16, 100, 4096}) {
    INFO("size " << size);
    const RunKey key{1, size};
    DataMessageBuilder varying(key, PayloadMode::per_message);
    const auto first = varying.stamp(1);
    const std::vector<std::byte> one(first.begin(), first.end());
    const auto second = varying.stamp(2);
    const std::vector<std::byte> two(second.begin(), second.end());
    CHECK(verify_data_message(one, key, key.salt()) == 1);
    CHECK(verify_data_message(two, key, key.salt()) == 2);
    if (size > 16) {
      CHECK(one != two);
      // Message 2's header on message 1's payload: what a stale page region would look like.
      std::vector<std::byte> stale = one;
      std::copy(two.begin(), two.begin() + 16, stale.begin());
      CHECK_FALSE(verify_data_message(stale, key, key.salt()));
    }
  }
}

TEST_CASE("sequence tracker: gaps, late arrivals and duplicates", "[tools][protocol]") {
  SequenceTracker t;
  for (std::uint64_t s : {0, 1, 2, 5, 6, 3, 3, 9, 4, 0}) t.record(s);
  CHECK(t.unique() == 8);            // 0 1 2 3 4 5 6 9
  CHECK(t.duplicated() == 2);        // the second 3 and the second 0
  CHECK(t.reordered() == 2);         // 3 and 4 filled the gap [3,5)
  CHECK(t.lost(std::nullopt) == 2);  // 7 and 8
  CHECK(t.lost(12) == 4);            // and 10, 11 that the sender says it sent
}

TEST_CASE("run tracker: a clean stream of several runs", "[tools][protocol]") {
  StreamBuilder stream;
  stream.run({0, 8}, 500);
  stream.run({1, 4096}, 100);
  stream.run({2, 8}, 3);  // the same size again is its own run
  stream.control(encode_end_of_stream(3));

  RunTracker tracker(true, fake_clock());
  const auto results = stream.feed(tracker);
  CHECK(tracker.end_of_stream());
  REQUIRE(results.size() == 3);
  CHECK(results[0].size == 8);
  CHECK(results[0].messages == 500);
  CHECK(results[0].bytes == 4000);
  CHECK(results[0].seconds > 0);
  CHECK(results[1].messages == 100);
  CHECK(results[2].messages == 3);
  for (const auto& r : results) {
    CHECK(r.complete);
    REQUIRE(r.verification);
    CHECK(r.verification->clean());
  }
  CHECK(tracker.live_messages() == 603);
  CHECK(tracker.stray_messages() == 0);
  CHECK(tracker.anomalies().empty());
}

TEST_CASE("run tracker: --verify finds lost, duplicated and corrupt messages", "[tools][protocol]") {
  // GENERATE, not a for loop: Catch2 runs each SECTION once per test-case pass.
  const std::uint64_t size = GENERATE(as<std::uint64_t>{}, 8, 12, 16, 1024);
  INFO("size " << size);
  const RunKey key{0, size};
  DataMessageBuilder builder(key);
  StreamBuilder stream;
  stream.control(encode_run_begin(key, 0));

  SECTION("a loss in the middle") {
    for (std::uint64_t s = 0; s < 100; ++s) {
      if (s != 40) stream.data(builder, s);
    }
    stream.control(encode_run_end(key, 100));
    RunTracker tracker(true, fake_clock());
    const auto r = stream.feed(tracker).at(0);
    CHECK(r.messages == 99);
    CHECK(r.verification->lost == 1);
    CHECK(r.verification->duplicated == 0);
    CHECK(r.verification->corrupt == 0);
  }
  SECTION("losses at the very end are counted against RUN_END") {
    for (std::uint64_t s = 0; s < 90; ++s) stream.data(builder, s);
    stream.control(encode_run_end(key, 100));
    RunTracker tracker(true, fake_clock());
    CHECK(stream.feed(tracker).at(0).verification->lost == 10);
  }
  SECTION("a duplicate") {
    for (std::uint64_t s = 0; s < 100; ++s) {
      stream.data(builder, s);
      if (s == 17) stream.data(builder, s);
    }
    stream.control(encode_run_end(key, 100));
    RunTracker tracker(true, fake_clock());
    const auto r = stream.feed(tracker).at(0);
    CHECK(r.messages == 101);
    CHECK(r.verification->lost == 0);
    CHECK(r.verification->duplicated == 1);
    CHECK(r.verification->corrupt == 0);
  }
  SECTION("a corrupted byte (its slot also counts as lost)") {
    for (std::uint64_t s = 0; s < 100; ++s) stream.data(builder, s);
    stream.control(encode_run_end(key, 100));
    auto& victim = stream.messages.at(1 + 50);
    victim[size - 1] ^= std::byte{0x10};
    RunTracker tracker(true, fake_clock());
    const auto r = stream.feed(tracker).at(0);
    CHECK(r.messages == 100);
    CHECK(r.verification->corrupt == 1);
    CHECK(r.verification->lost == 1);
    CHECK(r.verification->duplicated == 0);
  }
  SECTION("a flipped top bit makes a message look like a broken control frame") {
    for (std::uint64_t s = 0; s < 10; ++s) stream.data(builder, s);
    stream.control(encode_run_end(key, 10));
    stream.messages.at(1 + 3)[7] ^= std::byte{0x80};
    RunTracker tracker(true, fake_clock());
    const auto r = stream.feed(tracker).at(0);
    CHECK(r.messages == 10);
    CHECK(r.verification->corrupt == 1);
  }
  SECTION("a message of the wrong size") {
    for (std::uint64_t s = 0; s < 10; ++s) stream.data(builder, s);
    stream.messages.at(1 + 5).pop_back();
    stream.control(encode_run_end(key, 10));
    RunTracker tracker(true, fake_clock());
    CHECK(stream.feed(tracker).at(0).verification->corrupt == 1);
  }
}

TEST_CASE("run tracker: a late message fills its gap and is no duplicate", "[tools][protocol]") {
  const RunKey key{0, 64};
  DataMessageBuilder builder(key);
  StreamBuilder stream;
  stream.control(encode_run_begin(key, 5));
  for (std::uint64_t s : {0, 1, 3, 2, 4}) stream.data(builder, s);
  stream.control(encode_run_end(key, 5));
  RunTracker tracker(true, fake_clock());
  CHECK(stream.feed(tracker).at(0).verification->clean());
}

TEST_CASE("run tracker: without --verify nothing is checked or claimed", "[tools][protocol]") {
  StreamBuilder stream;
  stream.run({0, 64}, 10);
  stream.messages.at(3)[20] ^= std::byte{1};
  RunTracker tracker(false, fake_clock());
  const auto r = stream.feed(tracker).at(0);
  CHECK(r.messages == 10);
  CHECK_FALSE(r.verification);
}

TEST_CASE("run tracker: a cut stream, strays and anomalies", "[tools][protocol]") {
  const RunKey key{0, 32};
  DataMessageBuilder builder(key);
  StreamBuilder stream;
  stream.data(builder, 0);  // before any RUN_BEGIN
  stream.control(encode_run_begin(key, 0));
  for (std::uint64_t s = 0; s < 7; ++s) stream.data(builder, s);
  // no RUN_END: the sender died
  RunTracker tracker(true, fake_clock());
  const auto results = stream.feed(tracker);
  CHECK_FALSE(tracker.end_of_stream());
  CHECK(tracker.stray_messages() == 1);
  REQUIRE(results.size() == 1);
  CHECK_FALSE(results[0].complete);
  CHECK(results[0].messages == 7);
  CHECK(results[0].verification->clean());

  // A cut run ends where the caller says (the last progress), not when finish() is called.
  RunTracker::Clock::time_point begin{};
  RunTracker timed(false, [&begin] { return begin; });
  timed.on_message(encode_run_begin(key, 0));
  const auto cut = timed.finish(begin + 1500ms);
  REQUIRE(cut.size() == 1);
  CHECK(cut[0].seconds == Approx(1.5));

  RunTracker confused(true, fake_clock());
  confused.on_message(encode_run_end(key, 3));  // before any run: a stranger's, ignored and counted
  CHECK(confused.anomalies().empty());
  CHECK(confused.ignored_controls() == 1);
  confused.on_message(encode_run_begin(key, 0));
  confused.on_message(encode_run_end({1, 32}, 3));  // the end of another run inside this one
  CHECK(confused.anomalies().size() == 1);
}

TEST_CASE("ping messages: never a control frame, echoes recognised", "[tools][protocol]") {
  for (std::size_t size : {1, 7, 8, 48, 1000}) {
    INFO("size " << size);
    PingMessage ping(size);
    const auto bytes = ping.stamp(~std::uint64_t{0});
    CHECK_FALSE(decode_control_frame(bytes));
    CHECK_FALSE(looks_like_control_frame(bytes));
    std::vector<std::byte> echo(bytes.begin(), bytes.end());
    CHECK(ping.is_echo_of(echo, ~std::uint64_t{0}));
    CHECK_FALSE(ping.is_echo_of(echo, 5));
    echo.back() ^= std::byte{1};
    CHECK_FALSE(ping.is_echo_of(echo, ~std::uint64_t{0}));
  }
  netio::test::check_invalid_option([] { (void)PingMessage(0); }, {"at least 1 byte", "not 0"});
}

TEST_CASE("deadline", "[tools]") {
  const Deadline none(0s);
  CHECK(none.unlimited());
  CHECK_FALSE(none.expired());
  CHECK(none.remaining(100ms) == 100ms);
  const Deadline past(1ns);
  std::this_thread::sleep_for(1ms);
  CHECK(past.expired());
  CHECK(past.remaining(100ms) == 0ns);
  const Deadline later(1h);
  CHECK(later.remaining(100ms) == 100ms);
}

TEST_CASE("concurrent streams merge size by size, whatever sizes each stream ran", "[tools][protocol]") {
  using netio::tools::ThroughputResult;
  using netio::tools::Verification;
  const std::vector<std::vector<ThroughputResult>> streams{
      {{64, 100, 6400, 1.0, Verification{1, 0, 0}, true}, {4096, 10, 40960, 2.0, Verification{}, true}},
      {{4096, 20, 81920, 3.0, Verification{0, 2, 0}, false}},
      {{64, 50, 3200, 0.5, std::nullopt, true}, {64, 7, 448, 0.1, std::nullopt, true}},
  };
  const auto merged = netio::tools::merge_concurrent_results(streams);
  REQUIRE(merged.size() == 3);
  CHECK(merged[0].size == 64);  // the first 64 B run of streams 1 and 3
  CHECK(merged[0].messages == 150);
  CHECK(merged[0].bytes == 9600);
  CHECK(merged[0].seconds == 1.0);
  REQUIRE(merged[0].verification);
  CHECK(merged[0].verification->lost == 1);
  CHECK(merged[1].size == 4096);
  CHECK(merged[1].messages == 30);
  CHECK(merged[1].seconds == 3.0);
  CHECK_FALSE(merged[1].complete);
  CHECK(merged[1].verification->duplicated == 2);
  CHECK(merged[2].size == 64);  // stream 3's second 64 B run stays a run of its own
  CHECK(merged[2].messages == 7);
  CHECK_FALSE(merged[2].verification);
}

TEST_CASE("run tracker: a stream began only with a run", "[tools][protocol]") {
  netio::tools::RunTracker tracker(true);
  const std::vector<std::byte> junk(32, std::byte{0x41});
  tracker.on_message(junk);
  CHECK_FALSE(tracker.began());
  const auto begin = netio::tools::encode_run_begin({0, 64}, 1);
  tracker.on_message(begin);
  CHECK(tracker.began());
}
