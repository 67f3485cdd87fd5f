// SPDX-License-Identifier: MIT
// netio_pingpong: round-trip time of netio's low-latency sockets. Its options, JSON keys and
// exit status are documented in docs/man/netio_pingpong.1.md (man netio_pingpong).
//
//   netio_pingpong --server -e ENDPOINT [--port-file FILE] [--busy-poll] [--cpu N[,M]] [--timeout DURATION]
//   netio_pingpong -e ENDPOINT [-s SIZE] [-n ITERATIONS] [-w WARMUP] [--histogram] [--json]
//                  [--two-connections] [--busy-poll] [--cpu N[,M]] [--timeout DURATION]
//   netio_pingpong --version
#include "common/cli_options.hpp"
#include "common/cpu_affinity.hpp"
#include "common/deadline.hpp"
#include "common/json_writer.hpp"
#include "common/latency_stats.hpp"
#include "common/metrics_option.hpp"
#include "common/peer_access_options.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"
#include "common/units.hpp"
#include "pingpong/pingpong_client.hpp"
#include "pingpong/pingpong_server.hpp"

#include "netio/context.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <string>

namespace {

using namespace netio::tools;
constexpr const char* tool_name = "netio_pingpong";

struct Options {
  bool server = false;
  std::string endpoint;
  std::uint64_t size = 64;
  std::uint64_t iterations = 10000;
  std::uint64_t warmup = 1000;
  bool histogram = false;
  bool json = false;
  bool two_connections = false;
  bool busy_poll = false;
  std::string port_file;
  CpuChoice cpu;
  std::optional<netio::EmulationConfig> emulate;
  PeerAccess access;
  std::chrono::nanoseconds timeout{0};
  std::chrono::nanoseconds connect_timeout = netio::default_connect_timeout;
  MetricsOptions metrics;
};

void add_options(CLI::App& app, Options& o) {
  auto* server = app.add_flag("--server", o.server,
                              "Run the server: echo the pings of any number of clients at once, until Ctrl-C");
  app.add_option("-e,--endpoint", o.endpoint,
                 "Server: where to listen (port 0 picks a free one, printed on stderr); client: the server's "
                 "endpoint. " +
                     std::string(endpoint_forms))
      ->required();
  add_size_option(app, "-s,--size", o.size, "Client: ping size")->excludes(server);
  app.add_option("-n,--iterations", o.iterations, "Client: measured round trips")
      ->capture_default_str()
      ->excludes(server);
  app.add_option("-w,--warmup", o.warmup, "Client: round trips before measuring (not reported)")
      ->capture_default_str()
      ->excludes(server);
  app.add_flag("--histogram", o.histogram, "Client: also print a histogram of the round-trip times (log-scaled)")
      ->excludes(server);
  app.add_flag("--json", o.json,
               "Client: print one JSON document on stdout: {\"size\", \"iterations\", \"rtt_us\": {min, median, mean, "
               "p90, p99, p999, max, stddev}}")
      ->excludes(server);
  app.add_flag("--two-connections", o.two_connections,
               "Client: pongs come back on a second connection, from the server to a receive socket of the client, "
               "instead of as replies on the ping connection (to compare the two shapes)")
      ->excludes(server);
  app.add_option("--port-file", o.port_file, "Server: write the port listened on to FILE once listening")
      ->type_name("FILE")
      ->needs(server);
  app.add_flag("--busy-poll", o.busy_poll,
               "Spin the event loop instead of sleeping in epoll: lower, steadier latency, but it burns a whole "
               "core at 100 % for as long as the tool runs");
  add_cpu_option(app, o.cpu);
  add_emulate_option(app, o.emulate);
  add_peer_access_options(app, o.access, true);
  add_timeout_option(app, o.timeout);
  add_connect_timeout_option(app, o.connect_timeout)->excludes(server);
  add_metrics_options(app, o.metrics);
  app.footer(std::string(units_help) +
             "\n\nPings and pongs share one connection: the server answers each ping with a reply on the\n"
             "connection it came on. With --two-connections the client listens for the pongs on port 0 of the\n"
             "loopback address when the server is on loopback, else of the wildcard address, and the server\n"
             "connects back to it. Times are in microseconds; percentiles interpolate between samples, stddev is\n"
             "the population standard deviation.\n\n"
             "Exit status of the client: 0 when done, 1 on failure (server unreachable or gone, no reply, --timeout),\n"
             "128+N when stopped by signal N, other non-zero values for bad arguments. The server exits with 0\n"
             "when stopped by Ctrl-C, SIGTERM or --timeout.");
}

void validate(const Options& o) {
  if (o.server) return;
  if (!o.access.allow.empty()) throw CLI::ValidationError("--allow", "applies to the server (--server), which listens");
  if (o.size == 0) throw CLI::ValidationError("--size", "a ping needs at least 1 byte");
  if (o.iterations == 0) throw CLI::ValidationError("--iterations", "must be at least 1");
}

void print_text(const Options& o, const netio::Endpoint& server, const LatencyStats& s) {
  fmt::print("{}: {} round trips of {} to {} ({} warm-up)\n", tool_name, s.count, format_size(o.size),
             server.to_string(), o.warmup);
  fmt::print("RTT us {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "min", "median", "mean", "p90", "p99",
             "p99.9", "max", "stddev");
  fmt::print("       {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", s.min,
             s.median, s.mean, s.p90, s.p99, s.p999, s.max, s.stddev);
}

void print_json(const Options& o, const LatencyStats& s) {
  JsonWriter json;
  json.begin_object().field("size", o.size).field("iterations", s.count).key("rtt_us").begin_object();
  json.field("min", s.min)
      .field("median", s.median)
      .field("mean", s.mean)
      .field("p90", s.p90)
      .field("p99", s.p99)
      .field("p999", s.p999)
      .field("max", s.max)
      .field("stddev", s.stddev);
  json.end_object().end_object();
  fmt::print("{}\n", json.str());
}

int run_client(netio::Context& context, const Options& o, const Deadline& deadline) {
  PingpongClientOptions client;
  client.server = netio::Endpoint::parse(o.endpoint);
  client.size = o.size;
  client.iterations = o.iterations;
  client.warmup = o.warmup;
  client.two_connections = o.two_connections;
  client.key = o.access.key;
  client.connect_timeout = o.connect_timeout;
  const PingpongClientResult result = run_pingpong_client(context, client, deadline);

  if (!result.rtt_us.empty()) {
    const LatencyStats stats = compute_latency_stats(result.rtt_us);
    if (o.json)
      print_json(o, stats);
    else
      print_text(o, client.server, stats);
    // With --json, stdout holds the JSON document only.
    if (o.histogram) fmt::print(o.json ? stderr : stdout, "{}", text_histogram(result.rtt_us));
  }
  if (result.error) {
    fmt::print(stderr, "{}: error: {}\n", tool_name, *result.error);
    return exit_failure;
  }
  if (result.interrupted) {
    if (stop_requested()) {
      fmt::print(stderr, "{}: interrupted after {} measured round trips\n", tool_name, result.rtt_us.size());
      return 128 + stop_signal();
    }
    fmt::print(stderr, "{}: error: --timeout {} passed after {} of {} measured round trips\n", tool_name,
               format_duration(o.timeout), result.rtt_us.size(), o.iterations);
    return exit_failure;
  }
  return exit_ok;
}

int run_server(netio::Context& context, const Options& o, const Deadline& deadline) {
  PingpongServerCallbacks callbacks;
  callbacks.on_listening = [&](const netio::Endpoint& local) {
    fmt::print(stderr, "{}: listening on {}{}\n", tool_name, local.to_string(), o.busy_poll ? " (busy polling)" : "");
    if (!o.port_file.empty()) write_port_file(o.port_file, local.port);
  };
  run_pingpong_server(context, netio::Endpoint::parse(o.endpoint), deadline, callbacks, o.access.admission());
  if (stop_requested()) {
    fmt::print(stderr, "{}: stopped\n", tool_name);
    return exit_ok;  // Ctrl-C is how a server is meant to end
  }
  fmt::print(stderr, "{}: --timeout {} passed; stopped\n", tool_name, format_duration(o.timeout));
  return exit_ok;
}

int run(const Options& o) {
  install_termination_handlers();
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);
  netio::ContextOptions context_options;
  context_options.busy_poll = o.busy_poll;
  context_options.cpu = o.cpu.loop_thread;  // where the pings are answered and sent
  context_options.emulation = o.emulate;
  const MetricsSession metrics(o.metrics);
  netio::Context context(context_options);
  watch_metrics(context);
  return o.server ? run_server(context, o, deadline) : run_client(context, o, deadline);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "netio_pingpong: round-trip times of netio low-latency sockets. Start a server with --server, then "
      "run clients against it.",
      tool_name};
  Options options;
  add_options(app, options);
  add_version_flag(app);
  return parse_and_run(
      app, argc, argv, [&] { validate(options); }, [&] { return run(options); });
}
