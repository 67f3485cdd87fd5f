// SPDX-License-Identifier: MIT
// cold_memcpy: the memory-bandwidth reference of shm:// (issue 39, tools/bench/README.md).
// memcpy() from one buffer into another, both much larger than the last-level cache (default
// 1 GiB each), in calls of --size bytes, front to back, pass after pass: by the time a pass
// comes back to a byte it has long left the caches, so every call reads and writes memory
// (cold). Both buffers are written once before the clock starts, so page faults are not
// measured. Reports GB/s and Gb/s of bytes copied, and with --json the throughput programs'
// {"results":[{size, messages, bytes, seconds, msgs_per_s, gbps}]} (messages: memcpy calls),
// so that compare.sh reads it like the others.
//
//   cold_memcpy [-s SIZE] [--buffer-size SIZE] [-t DURATION | -n PASSES] [--json] [--cpu N]
#include "bench/common/bench_common.hpp"
#include "common/cli_options.hpp"
#include "common/json_writer.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"
#include "common/units.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstring>
#include <memory>

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "cold_memcpy";

struct Options {
  std::uint64_t size = 1 << 20;            // bytes per memcpy() call
  std::uint64_t buffer_size = 1ull << 30;  // each of the two buffers
  std::uint64_t passes = 0;                // 0: copy for `time`
  std::chrono::nanoseconds time{std::chrono::seconds(2)};
  bool json = false;
  std::optional<int> cpu;
};

// The last-level cache the C library reports (0 where it does not), for the report: the
// buffers should be several times larger.
std::uint64_t last_level_cache_bytes() {
  for (const int name : {_SC_LEVEL4_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = ::sysconf(name);
    if (bytes > 0) return static_cast<std::uint64_t>(bytes);
  }
  return 0;
}

int run(const Options& o) {
  // new char[] leaves the pages untouched; the memset()s below fault them all in.
  const std::unique_ptr<char[]> source(new char[o.buffer_size]);
  const std::unique_ptr<char[]> destination(new char[o.buffer_size]);
  std::memset(source.get(), 'm', o.buffer_size);
  std::memset(destination.get(), 0, o.buffer_size);
  const std::uint64_t llc = last_level_cache_bytes();
  if (llc > 0 && 2 * o.buffer_size < 4 * llc) {
    fmt::print(stderr, "{}: warning: 2 x {} of buffers is less than 4x the last-level cache ({}): not all cold\n",
               tool_name, netio::tools::format_size(o.buffer_size), netio::tools::format_size(llc));
  }

  const auto start = Clock::now();
  const auto end_time = start + o.time;
  std::uint64_t calls = 0, bytes = 0, passes = 0;
  for (bool done = false; !done && !netio::tools::stop_requested(); ++passes) {
    for (std::uint64_t offset = 0; offset < o.buffer_size; offset += o.size) {
      const std::uint64_t length = std::min(o.size, o.buffer_size - offset);
      std::memcpy(destination.get() + offset, source.get() + offset, length);
      // The copy's result is never read: tell the compiler memory was used, so it stays.
      asm volatile("" : : "r"(destination.get()) : "memory");
      ++calls;
      bytes += length;
    }
    done = o.passes ? passes + 1 >= o.passes : Clock::now() >= end_time;
  }
  netio::tools::ThroughputResult r;
  r.size = o.size;
  r.messages = calls;
  r.bytes = bytes;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double gbytes_per_s = r.seconds > 0 ? static_cast<double>(bytes) / r.seconds / 1e9 : 0;
  if (o.json) {
    netio::tools::JsonWriter json;
    const netio::tools::ThroughputResult results[] = {r};
    json.begin_object().key("results");
    netio::tools::write_results_array(json, results, netio::tools::VerificationColumns::none);
    json.field("gbytes_per_s", gbytes_per_s)
        .field("buffer_bytes", o.buffer_size)
        .field("passes", passes)
        .field("last_level_cache_bytes", llc)
        .end_object();
    fmt::print("{}\n", json.str());
  } else {
    fmt::print("{}: {} passes over 2 x {} in calls of {}: {:.2f} GB/s = {:.1f} Gb/s\n", tool_name, passes,
               netio::tools::format_size(o.buffer_size), netio::tools::format_size(o.size), gbytes_per_s, r.gbps());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cold_memcpy: memcpy() between two buffers much larger than the last-level cache, the cold "
      "memory-bandwidth reference for shm://. Reports GB/s and Gb/s of bytes copied.",
      tool_name};
  Options o;
  netio::tools::add_size_option(app, "-s,--size", o.size, "Bytes per memcpy() call (the message size to compare)");
  netio::tools::add_size_option(app, "--buffer-size", o.buffer_size,
                                "Bytes of each of the two buffers; several times the last-level cache");
  auto* n = app.add_option("-n,--passes", o.passes, "Copy the whole buffer N times");
  netio::tools::add_duration_option(app, "-t,--time", o.time, "Copy whole passes until DURATION has passed (unless -n)")
      ->excludes(n);
  app.add_flag("--json", o.json,
               "Print {\"results\":[{size, messages (calls), bytes, seconds, msgs_per_s, gbps}], gbytes_per_s, "
               "buffer_bytes, passes, last_level_cache_bytes}");
  add_cpu_option(app, o.cpu);
  app.footer(netio::tools::units_help);
  try {
    app.parse(argc, argv);
    if (o.size == 0) throw CLI::ValidationError("--size", "must be at least 1 byte");
    if (o.buffer_size < o.size) throw CLI::ValidationError("--buffer-size", "must hold at least one --size");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return netio::tools::run_tool(tool_name, [&] {
    netio::tools::install_termination_handlers();
    pin_if_asked(o.cpu);
    return run(o);
  });
}
