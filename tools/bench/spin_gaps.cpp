// SPDX-License-Identifier: MIT
// spin_gaps: how often the machine takes a core from a spinning thread, and for how long:
// the floor under the tail of busy-polling round trips (issue 49, item 8; busy_tail.sh).
// One thread per CPU, each pinned to its CPU, reads the clock in a loop for -t DURATION and
// counts the gaps between two reads longer than 20 us (a switch to another task: a woken
// kernel thread, an interrupt's work) and longer than 1 ms (another program's turn: a
// scheduler tick of 4 ms at 250 Hz). No system call while spinning, so every gap is the
// machine's, not the program's.
//
//   spin_gaps [-t DURATION] [--cpus LIST] [--json]
#include "bench/common/bench_common.hpp"
#include "common/cli_options.hpp"
#include "common/cpu_affinity.hpp"
#include "common/json_writer.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "spin_gaps";
constexpr auto short_gap = std::chrono::microseconds(20);
constexpr auto long_gap = std::chrono::milliseconds(1);

struct Options {
  std::chrono::nanoseconds time{std::chrono::seconds(2)};
  std::vector<int> cpus;  // empty: every online CPU
  bool json = false;
};

struct Gaps {
  int cpu = 0;
  std::uint64_t over_20us = 0;
  std::uint64_t over_1ms = 0;
  std::chrono::nanoseconds longest{0};
};

Gaps spin(int cpu, std::chrono::nanoseconds time) {
  netio::tools::pin_current_thread(cpu);
  Gaps gaps{cpu};
  const auto start = Clock::now();
  auto last = start;
  while (last - start < time) {
    const auto now = Clock::now();
    const auto gap = now - last;
    if (gap > short_gap) {
      ++gaps.over_20us;
      if (gap > long_gap) ++gaps.over_1ms;
      gaps.longest = std::max<std::chrono::nanoseconds>(gaps.longest, gap);
    }
    last = now;
  }
  return gaps;
}

int run(Options o) {
  if (o.cpus.empty()) {
    for (int cpu = 0; cpu < static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)); ++cpu) o.cpus.push_back(cpu);
  }
  std::vector<Gaps> results(o.cpus.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < o.cpus.size(); ++i) {
      threads.emplace_back([&results, &o, i] { results[i] = spin(o.cpus[i], o.time); });
    }
  }
  const double seconds = std::chrono::duration<double>(o.time).count();
  if (o.json) {
    netio::tools::JsonWriter json;
    json.begin_object().field("seconds", seconds).key("cpus").begin_array();
    for (const auto& g : results) {
      json.begin_object()
          .field("cpu", g.cpu)
          .field("gaps_over_20us", g.over_20us)
          .field("gaps_over_1ms", g.over_1ms)
          .field("longest_us", std::chrono::duration<double, std::micro>(g.longest).count())
          .end_object();
    }
    json.end_array().end_object();
    fmt::print("{}\n", json.str());
  } else {
    for (const auto& g : results) {
      fmt::print("{}: CPU {}: {} gaps over 20 us, {} over 1 ms in {:.1f} s; longest {:.0f} us\n", tool_name, g.cpu,
                 g.over_20us, g.over_1ms, seconds, std::chrono::duration<double, std::micro>(g.longest).count());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "spin_gaps: one spinning thread pinned to each CPU counts the gaps in its running (another task "
      "took the core): the floor under busy-polling round trips' tail.",
      tool_name};
  Options o;
  netio::tools::add_duration_option(app, "-t,--time", o.time, "Spin for DURATION");
  app.add_option("--cpus", o.cpus, "CPUs to spin on (default: every online CPU)")->delimiter(',');
  app.add_flag("--json", o.json, "Print {\"seconds\", \"cpus\": [{cpu, gaps_over_20us, gaps_over_1ms, longest_us}]}");
  app.footer(netio::tools::units_help);
  return netio::tools::parse_and_run(
      app, argc, argv, [] {}, [&] { return run(o); });
}
