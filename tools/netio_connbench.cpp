// SPDX-License-Identifier: MIT
// netio_connbench: on-demand connections under a connection limit. Its options, JSON keys and
// exit status are documented in docs/man/netio_connbench.1.md (man netio_connbench).
//
//   netio_connbench --peers P --max-connections K[,K...] --policy lru|lru-m[,...] [--json]
//                   [--backend tcp|shm|fabric | -e BASE] [--mode ll|ht] [-s SIZE] [--hot H]
//                   [--hot-share F] [--accesses N] [--burst B] [--seed S] [--timeout DURATION]
#include "common/cli_options.hpp"
#include "common/cpu_affinity.hpp"
#include "common/deadline.hpp"
#include "common/json_writer.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"
#include "common/units.hpp"
#include "connbench/connbench.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace netio::tools;
constexpr const char* tool_name = "netio_connbench";

struct Options {
  ConnbenchPattern pattern;
  std::vector<std::uint64_t> max_connections{8};
  std::vector<std::string> policies{"lru"};
  bool json = false;
  std::string backend;
  std::string base;
  std::string mode = "ll";
  std::uint64_t size = 256;
  std::uint64_t buffers = 16;
  std::uint64_t buffer_size = 16384;
  CpuChoice cpu;
  std::optional<netio::EmulationConfig> emulate;
  std::chrono::nanoseconds timeout{0};
  std::size_t repeat = 1;
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("--peers", o.pattern.peers, "Receivers (destinations), each its own receive socket on loopback")
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections,
                 "Open connections at most; 0: no limit (all stay open). A list runs each in turn")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--policy", o.policies, "Victim selection: lru or lru-m. A list runs each in turn")
      ->delimiter(',')
      ->check(CLI::IsMember({"lru", "lru-m"}))
      ->capture_default_str();
  app.add_flag("--json", o.json,
               "Print one JSON document on stdout: {msgs_per_s, opened, torn_down, peak_connections, "
               "peak_connection_bytes, ...} for one configuration, {\"runs\": [...]} of such objects for several "
               "(those done, when cut short)");
  auto* backend =
      app.add_option("--backend", o.backend,
                     "tcp or fabric (libfabric's tcp provider) on 127.0.0.1, or shm (Unix-domain, this node)")
          ->check(CLI::IsMember({"tcp", "shm", "fabric"}));
  app.add_option("-e,--endpoint", o.base,
                 "Where the receivers listen, each on a port of its own (port 0), e.g. "
                 "fabric://127.0.0.1:0?provider=sockets; default tcp://127.0.0.1:0")
      ->excludes(backend);
  app.add_option("--mode", o.mode, "ll: low-latency connections; ht: high-throughput ones")
      ->check(CLI::IsMember({"ll", "ht"}))
      ->capture_default_str();
  add_size_option(app, "-s,--size", o.size, "Message size (at least 8 bytes)");
  app.add_option("--hot", o.pattern.hot, "The hot set: destinations taking --hot-share of the accesses")
      ->capture_default_str();
  app.add_option("--hot-share", o.pattern.hot_share,
                 "Share of accesses to the hot set (0..1); the rest go to "
                 "random others")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--accesses", o.pattern.accesses, "Accesses (bursts) in all")->capture_default_str();
  app.add_option("--burst", o.pattern.burst, "Messages per access")->capture_default_str();
  app.add_option("--seed", o.pattern.seed, "Seed of the access pattern (the same for every run)")
      ->capture_default_str();
  app.add_option("--buffers", o.buffers, "Per connection: low-latency send buffers or high-throughput pages")
      ->capture_default_str();
  add_size_option(app, "--buffer-size", o.buffer_size, "Bytes per low-latency send buffer or high-throughput page");
  app.add_option("--repeat", o.repeat,
                 "Run every configuration this many times, in interleaved rounds (all configurations once, each "
                 "round starting one later), and report the median msg/s and peak connection memory (the other "
                 "figures are the first round's: the pattern is the same every time; memory varies in --mode ht, "
                 "where pages are allocated as the timing needs them). Each round's figures go to stderr")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_cpu_option(app, o.cpu);
  add_emulate_option(app, o.emulate);
  add_timeout_option(app, o.timeout);
  app.footer(std::string(units_help) +
             "\n\nOne sender (a MultiDestinationSendSocket) sends to --peers receivers in this process. Each access\n"
             "is a burst of --burst messages to one destination: a hot set (--hot) takes --hot-share of them, random\n"
             "others the rest. The pattern is drawn once from --seed, so every configuration replays it. msg/s\n"
             "counts from the first send until the receivers have every message; connection memory is the send\n"
             "buffers (or pages) the open connections allocated, at the peak; in --mode ht with a limit, the pages\n"
             "of the socket's pool (sized by the limit, shared by the open connections), counted whole.\n\n"
             "Exit status: 0 when done, 1 on failure (--timeout included), 3 if a message was lost, duplicated or\n"
             "reordered, 128+N when stopped by signal N (Ctrl-C), other non-zero values for bad arguments. Ctrl-C\n"
             "and --timeout report the configurations that finished a round.");
}

void validate(const Options& o) {
  if (o.pattern.peers == 0) throw CLI::ValidationError("--peers", "must be at least 1");
  if (o.pattern.hot > o.pattern.peers) throw CLI::ValidationError("--hot", "must not exceed --peers");
  if (o.size < 8) throw CLI::ValidationError("--size", "a message carries an 8-byte sequence number: at least 8");
  if (o.pattern.burst == 0 || o.pattern.accesses == 0) {
    throw CLI::ValidationError("--burst/--accesses", "must be at least 1");
  }
  if (o.buffers == 0) throw CLI::ValidationError("--buffers", "must be at least 1");
}

std::string limit_text(const ConnbenchResult& r, std::size_t peers) {
  return r.max_connections == 0 ? fmt::format("all ({})", peers) : std::to_string(r.max_connections);
}

// `rounds`: how many rounds each configuration ran, "3" or, when the run was cut short in
// the middle of a round, "37–38".
void print_text(const Options& o, const ConnbenchConfig& config, const std::vector<ConnbenchResult>& results,
                const std::string& rounds) {
  fmt::print("{}: {} peers, hot set {} ({:.0f} % of accesses), {} accesses x {} messages of {}, {}, {}\n", tool_name,
             o.pattern.peers, o.pattern.hot, o.pattern.hot_share * 100, o.pattern.accesses, o.pattern.burst,
             format_size(o.size), o.mode == "ll" ? "low-latency" : "high-throughput", config.base);
  if (o.repeat > 1) fmt::print("msg/s: the median of {} interleaved rounds\n", rounds);
  fmt::print("{:>10} {:>7} {:>12} {:>8} {:>10} {:>9} {:>9} {:>16} {:>8}\n", "max_conn", "policy", "msg/s", "opened",
             "torn_down", "reopened", "peak_conn", "peak_conn_bytes", "seconds");
  for (const auto& r : results) {
    fmt::print("{:>10} {:>7} {:>12.0f} {:>8} {:>10} {:>9} {:>9} {:>16} {:>8.3f}\n", limit_text(r, o.pattern.peers),
               r.max_connections == 0 ? "-" : std::string(netio::to_string(r.policy)), r.msgs_per_s,
               r.connections.opened, r.connections.torn_down, r.connections.reopened, r.connections.peak_open,
               format_size(r.connections.peak_connection_bytes), r.seconds);
  }
}

void write_result(JsonWriter& json, const ConnbenchResult& r) {
  json.begin_object()
      .field("max_connections", r.max_connections)
      .field("policy", netio::to_string(r.policy))
      .field("msgs_per_s", r.msgs_per_s)
      .field("opened", r.connections.opened)
      .field("torn_down", r.connections.torn_down)
      .field("reopened", r.connections.reopened)
      .field("failed", r.connections.failed)
      .field("peak_connections", r.connections.peak_open)
      .field("peak_connection_bytes", r.connections.peak_connection_bytes)
      .field("messages", r.messages)
      .field("seconds", r.seconds)
      .field("out_of_order", r.out_of_order)
      .end_object();
}

// The document's shape follows what was asked (`several` configurations), not how many ran:
// a run cut short by --timeout or Ctrl-C reads as the full one would.
void print_json(const std::vector<ConnbenchResult>& results, bool several) {
  JsonWriter json;
  if (!several) {
    write_result(json, results.front());
  } else {
    json.begin_object().key("runs").begin_array();
    for (const auto& r : results) write_result(json, r);
    json.end_array().end_object();
  }
  fmt::print("{}\n", json.str());
}

int run(const Options& o) {
  install_termination_handlers();
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);
  ConnbenchConfig config;
  if (!o.base.empty())
    config.base = o.base;
  else if (o.backend == "fabric")
    config.base = "fabric://127.0.0.1:0?provider=tcp";
  else if (o.backend == "shm")
    config.base = "shm://netio-connbench:0";
  config.mode = o.mode == "ll" ? netio::SendMode::low_latency : netio::SendMode::high_throughput;
  config.size = o.size;
  config.buffers = o.buffers;
  config.buffer_size = o.buffer_size;
  config.emulate = o.emulate;
  config.sender_loop_cpu = o.cpu.loop_thread;
  const auto accesses = draw_accesses(o.pattern);

  struct Configuration {
    std::uint64_t limit;
    netio::ConnectionPolicy policy;
  };
  std::vector<Configuration> configurations;
  for (const std::uint64_t limit : o.max_connections) {
    // Without a limit there is nothing to tear down: the policy does not matter, run once.
    for (std::size_t p = 0; p < (limit == 0 ? 1 : o.policies.size()); ++p) {
      configurations.push_back({limit, netio::parse_connection_policy(o.policies[p])});
    }
  }
  // Rounds of every configuration, so that load from elsewhere spreads over all of them.
  std::vector<ConnbenchResult> results;
  std::vector<std::vector<double>> rates(configurations.size());
  std::vector<std::vector<std::uint64_t>> memory(configurations.size());
  // Each round starts one configuration later: a run right after others can be slowed by
  // their clean-up (hundreds of closed connections), and no configuration should always be last.
  results.resize(configurations.size());
  // Ctrl-C, SIGTERM or --timeout end the rounds early: the configurations with a round done
  // are still reported, and the exit status says the run was cut short.
  int status = exit_ok;
  try {
    for (std::size_t round = 0; round < o.repeat; ++round) {
      for (std::size_t i = 0; i < configurations.size(); ++i) {
        const std::size_t c = (i + round) % configurations.size();
        const auto r = run_connbench(config, accesses, o.pattern.peers, o.pattern.burst, configurations[c].limit,
                                     configurations[c].policy, deadline);
        const std::uint64_t out_of_order = results[c].out_of_order + r.out_of_order;
        if (round == 0) results[c] = r;
        results[c].out_of_order = out_of_order;
        rates[c].push_back(r.msgs_per_s);
        memory[c].push_back(r.connections.peak_connection_bytes);
        fmt::print(stderr, "{}: round {} max_connections {} {}: {:.0f} msg/s, peak connection memory {} B\n", tool_name,
                   round + 1, configurations[c].limit,
                   configurations[c].limit == 0 ? "-" : netio::to_string(configurations[c].policy), r.msgs_per_s,
                   r.connections.peak_connection_bytes);
      }
    }
  } catch (const ConnbenchInterrupted&) {
    fmt::print(stderr, "{}: interrupted; reporting the rounds done\n", tool_name);
    status = 128 + stop_signal();  // the shell's convention for "ended by a signal"
  } catch (const netio::Error& e) {
    if (e.code() != netio::Errc::timeout) throw;
    fmt::print(stderr, "{}: error: {}; reporting the rounds done\n", tool_name, e.what());
    status = exit_failure;
  }
  std::vector<ConnbenchResult> done;
  std::size_t fewest_rounds = o.repeat, most_rounds = 0;
  for (std::size_t c = 0; c < configurations.size(); ++c) {
    const std::size_t n = rates[c].size();
    if (n == 0) continue;
    fewest_rounds = std::min(fewest_rounds, n);
    most_rounds = std::max(most_rounds, n);
    std::sort(rates[c].begin(), rates[c].end());
    results[c].msgs_per_s = n % 2 == 1 ? rates[c][n / 2] : (rates[c][n / 2 - 1] + rates[c][n / 2]) / 2;
    results[c].seconds = static_cast<double>(results[c].messages) / results[c].msgs_per_s;  // at the median rate
    std::sort(memory[c].begin(), memory[c].end());
    results[c].connections.peak_connection_bytes = memory[c][(n - 1) / 2];  // the lower median: a value seen
    done.push_back(results[c]);
  }
  results = std::move(done);
  if (results.empty()) return status;
  if (o.json)
    print_json(results, configurations.size() > 1);
  else {
    print_text(
        o, config, results,
        fewest_rounds == most_rounds ? std::to_string(most_rounds) : fmt::format("{}–{}", fewest_rounds, most_rounds));
  }
  for (const auto& r : results) {
    if (r.out_of_order != 0) {
      fmt::print(stderr, "{}: error: {} messages lost, duplicated or out of order (max_connections {}, {})\n",
                 tool_name, r.out_of_order, r.max_connections, netio::to_string(r.policy));
      return exit_verification_failed;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "netio_connbench: sending to many peers through a bounded number of connections, opened on demand "
      "and torn down by LRU or LRU-M (throughput, tear-downs, peak connections and their memory).",
      tool_name};
  Options options;
  add_options(app, options);
  add_version_flag(app);
  return parse_and_run(
      app, argc, argv, [&] { validate(options); }, [&] { return run(options); });
}
