// SPDX-License-Identifier: MIT
// netio_throughput: the sending side of the throughput benchmark. Its options, JSON keys and
// exit status are documented in docs/man/netio_throughput.1.md (man netio_throughput).
//
//   netio_throughput -e ENDPOINT [--mode ht|ll] (-s SIZE[,SIZE...] | --sweep)
//                    [-n MESSAGES | -t DURATION] [--page-size SIZE] [--flush-timeout DURATION]
//                    [--verify] [--json] [--cpu N[,M]] [--timeout DURATION]
//
//   netio_throughput --publish -e BIND_ENDPOINT --tags T[,T...] [--subscribers K]
//                    [--max-connections N [--policy lru|lru-m]] [--port-file FILE] (-s ... | --sweep) [...]
//
// Pair it with netio_recv (--subscribe with --publish) on the other end; the message
// format is in common/bench_message.hpp.
#include "common/cli_options.hpp"
#include "common/cpu_affinity.hpp"
#include "common/deadline.hpp"
#include "common/json_writer.hpp"
#include "common/metrics_option.hpp"
#include "common/peer_access_options.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"
#include "common/units.hpp"
#include "throughput/bench_publisher.hpp"
#include "throughput/bench_sender.hpp"

#include "netio/context.hpp"
#include "netio/high_throughput_socket.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <string>

namespace {

using namespace netio::tools;
constexpr const char* tool_name = "netio_throughput";

struct Options {
  std::string endpoint;
  std::string mode = "ht";
  std::vector<std::uint64_t> sizes;
  bool sweep = false;
  std::optional<std::uint64_t> messages;
  std::optional<std::chrono::nanoseconds> duration;
  std::uint64_t page_size = 1024 * 1024;
  std::uint64_t pages = netio::HighThroughputSendOptions{}.page_count;
  std::uint64_t zero_copy_threshold = 0;
  bool zero_copy_threshold_given = false;
  std::chrono::nanoseconds flush_timeout = std::chrono::seconds(2);
  bool verify = false;
  bool json = false;
  CpuChoice cpu;
  std::optional<netio::EmulationConfig> emulate;
  MetricsOptions metrics;
  PeerAccess access;
  std::chrono::nanoseconds timeout{0};
  std::chrono::nanoseconds connect_timeout = netio::default_connect_timeout;
  bool publish = false;  // publish/subscribe: -e is where the publisher binds
  std::vector<std::uint64_t> tags;
  std::uint64_t subscribers = 1;
  std::string port_file;
  std::size_t max_connections = 0;
  std::string policy = "lru";
};

constexpr auto default_duration = std::chrono::seconds(2);

void add_options(CLI::App& app, Options& o) {
  app.add_option("-e,--endpoint", o.endpoint, std::string("Where netio_recv listens: ") + endpoint_forms)->required();
  app.add_option("--mode", o.mode,
                 "ht: high-throughput sockets (batched into pages); ll: low-latency sockets (one "
                 "message per buffer). Must match netio_recv's --mode")
      ->check(CLI::IsMember({"ht", "ll"}))
      ->capture_default_str();
  auto* sizes = app.add_option("-s,--size", o.sizes, "Message sizes, one run each, in this order (at least 8 B)")
                    ->delimiter(',')
                    ->transform(size_transformer())
                    ->type_name("SIZE[,SIZE...]");
  auto* sweep = app.add_flag("--sweep", o.sweep, "Run 8 B, 32 B, 128 B, ... 512 KiB (powers of four), then 1 MiB");
  sizes->excludes(sweep);
  auto* messages = app.add_option("-n,--messages", o.messages, "Messages per size");
  auto* duration = add_duration_option(
      app, "-t,--time", o.duration,
      fmt::format("Time per size (default {} when -n is not given)", format_duration(default_duration)));
  messages->excludes(duration);
  add_size_option(app, "--page-size", o.page_size, "Page size of the high-throughput socket (--mode ht)");
  app.add_option("--pages", o.pages, "Pages in the sender's pool (--mode ht): its memory is pages × page size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_size_option(app, "--zero-copy-threshold", o.zero_copy_threshold,
                  "Messages at least this large are sent from the tool's memory instead of being copied into "
                  "pages (--mode ht; a huge value such as 1GiB turns that off). auto: the socket's default, 256 KiB, "
                  "or 1.5 MiB over libfabric's tcp and sockets providers")
      ->default_str("auto")
      ->each([&o](const std::string&) { o.zero_copy_threshold_given = true; });
  add_duration_option(app, "--flush-timeout", o.flush_timeout,
                      "How long a partly filled page may wait before it is sent (--mode ht; each run ends with an "
                      "explicit flush anyway)");
  app.add_flag("--verify", o.verify,
               "Give every message a payload of its own (not one per run), so that netio_recv --verify also "
               "catches stale payload bytes. Costs sender CPU: do not compare its rates with runs without it. "
               "(Sequence numbers and checks are always stamped; netio_recv --verify works without this too)");
  app.add_flag("--json", o.json,
               "Print one JSON document on stdout: {\"results\":[{size, messages, bytes, "
               "seconds, msgs_per_s, gbps}]}");
  add_cpu_option(app, o.cpu);
  add_emulate_option(app, o.emulate);
  add_metrics_options(app, o.metrics);
  add_peer_access_options(app, o.access, /*listens=*/true);  // --allow: with --publish only (who may subscribe)
  add_timeout_option(app, o.timeout);
  auto* connect_timeout = add_connect_timeout_option(app, o.connect_timeout);
  auto* publish = app.add_flag("--publish", o.publish,
                               "Publish instead of sending to one receiver: bind a publish socket at -e and, once "
                               "--subscribers subscribers are in (netio_recv --subscribe), publish round-robin over "
                               "--tags; each subscription's mode is the subscriber's choice. --pages is the shared "
                               "pool of all subscribers");
  connect_timeout->excludes(publish);  // a publisher listens: its subscribers connect to it
  app.add_option("--tags", o.tags, "With --publish: the tags to publish under, round-robin (64-bit integers)")
      ->delimiter(',')
      ->type_name("T[,T...]")
      ->needs(publish);
  app.add_option("--subscribers", o.subscribers,
                 "With --publish: subscribers to wait for (their data connections up, subscriptions "
                 "acknowledged) before the first message")
      ->check(CLI::PositiveNumber)
      ->needs(publish)
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections,
                 "With --publish: data connections open at once per mode (low-latency, high-throughput); "
                 "subscribers beyond it are served by tearing down the least recently used one and "
                 "connecting again. 0: no limit")
      ->needs(publish)
      ->capture_default_str();
  app.add_option("--policy", o.policy, "With --publish --max-connections: which connection is torn down, lru or lru-m")
      ->check(CLI::IsMember({"lru", "lru-m"}))
      ->needs(publish)
      ->capture_default_str();
  app.add_option("--port-file", o.port_file,
                 "With --publish: write the port bound to FILE once listening (for scripts using port 0)")
      ->type_name("FILE")
      ->needs(publish);
  app.footer(std::string(units_help) +
             "\n\nExit status: 0 when every run was sent, 1 on failure (connection refused, receiver gone,\n"
             "--timeout), 128+N when stopped by signal N (Ctrl-C), other non-zero values for bad arguments.");
}

void validate(const CLI::App& app, const Options& o) {
  if (o.publish && o.tags.empty()) throw CLI::ValidationError("--tags", "--publish needs the tags: --tags T[,T...]");
  if (!o.publish && !o.access.allow.empty()) {
    throw CLI::ValidationError("--allow", "applies to --publish only (who may subscribe); the sender connects to -e");
  }
  if (o.publish && app.count("--mode") > 0) {
    throw CLI::ValidationError(
        "--mode", "does not apply to --publish (each subscriber picks its mode: netio_recv --subscribe --mode)");
  }
  if (o.sizes.empty() && !o.sweep) throw CLI::ValidationError("give the message sizes: -s SIZE[,SIZE...] or --sweep");
  for (const std::uint64_t size : o.sizes) {
    if (size < min_data_message_size) {
      throw CLI::ValidationError("--size", fmt::format("{} B is too small: benchmark messages carry an 8-byte header, "
                                                       "so the smallest size is {} B",
                                                       size, min_data_message_size));
    }
  }
  if (o.messages && *o.messages == 0) throw CLI::ValidationError("--messages", "must be at least 1");
  if (o.duration && *o.duration <= std::chrono::nanoseconds::zero()) {
    throw CLI::ValidationError("--time", "must be longer than 0");
  }
  if (o.mode == "ll") {
    for (const char* name : {"--page-size", "--pages", "--zero-copy-threshold", "--flush-timeout"}) {
      if (app.count(name) > 0) {
        throw CLI::ValidationError(name, "applies to --mode ht only (low-latency sockets have no pages)");
      }
    }
  }
}

void print_run_progress(const ThroughputResult& r) {
  fmt::print(stderr, "{}: {:>9}: {} messages in {:.3f} s, {:.0f} msg/s, {:.3f} Gb/s\n", tool_name, format_size(r.size),
             r.messages, r.seconds, r.msgs_per_s(), r.gbps());
}

int report_and_exit(const Options& o, const BenchSenderReport& report);

// --publish: the pub/sub benchmark's publisher (throughput/bench_publisher.hpp).
int run_publisher(const Options& o) {
  install_termination_handlers();
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);
  BenchPublisherOptions publisher;
  publisher.local = netio::Endpoint::parse(o.endpoint);
  publisher.tags.assign(o.tags.begin(), o.tags.end());
  publisher.subscribers = o.subscribers;
  publisher.sizes = o.sweep ? sweep_sizes() : o.sizes;
  publisher.messages_per_size = o.messages;
  publisher.duration_per_size = o.duration.value_or(default_duration);
  publisher.payload = o.verify ? PayloadMode::per_message : PayloadMode::fixed_per_run;
  publisher.page_size = o.page_size;
  publisher.page_count = o.pages;
  publisher.flush_timeout = o.flush_timeout;
  publisher.admission = o.access.admission();
  publisher.max_connections = o.max_connections;
  publisher.policy = netio::parse_connection_policy(o.policy);
  netio::ContextOptions context_options;
  context_options.cpu = o.cpu.loop_thread;
  context_options.emulation = o.emulate;
  netio::Context context(context_options);
  watch_metrics(context);
  BenchPublisherCallbacks callbacks;
  callbacks.on_listening = [&](const netio::Endpoint& local) {
    fmt::print(stderr, "{}: publishing on {}, waiting for {} subscriber(s)\n", tool_name, local.to_string(),
               o.subscribers);
    if (!o.port_file.empty()) write_port_file(o.port_file, local.port);
  };
  if (!o.json) callbacks.on_run_done = print_run_progress;
  return report_and_exit(o, run_bench_publisher(context, publisher, deadline, callbacks));
}

int run(const Options& o) {
  const MetricsSession metrics(o.metrics);
  if (o.publish) return run_publisher(o);
  install_termination_handlers();
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);

  BenchSenderOptions sender;
  sender.remote = netio::Endpoint::parse(o.endpoint);
  sender.mode = o.mode == "ll" ? SocketMode::low_latency : SocketMode::high_throughput;
  sender.key = o.access.key;
  sender.sizes = o.sweep ? sweep_sizes() : o.sizes;
  sender.messages_per_size = o.messages;
  sender.duration_per_size = o.duration.value_or(default_duration);
  sender.payload = o.verify ? PayloadMode::per_message : PayloadMode::fixed_per_run;
  sender.page_size = o.page_size;
  sender.page_count = o.pages;
  if (o.zero_copy_threshold_given) sender.zero_copy_threshold = o.zero_copy_threshold;
  sender.flush_timeout = o.flush_timeout;
  sender.connect_timeout = o.connect_timeout;

  netio::ContextOptions context_options;
  context_options.cpu = o.cpu.loop_thread;
  context_options.emulation = o.emulate;
  netio::Context context(context_options);
  watch_metrics(context);

  // A connection failure escapes as netio::Error, whose message names the endpoint.
  return report_and_exit(o, run_bench_sender(context, sender, deadline, o.json ? nullptr : print_run_progress));
}

int report_and_exit(const Options& o, const BenchSenderReport& report) {
  if (o.json) {
    JsonWriter json;
    write_results_json(json, report.results, VerificationColumns::none);
    fmt::print("{}\n", json.str());
  } else {
    fmt::print("{}", results_table(report.results, VerificationColumns::none));
  }
  if (report.error) {
    fmt::print(stderr, "{}: error: {}\n", tool_name, *report.error);
    return exit_failure;
  }
  if (report.interrupted) {
    if (stop_requested()) {
      if (report.results.empty())
        fmt::print(stderr, "{}: interrupted before anything was sent\n", tool_name);
      else
        fmt::print(stderr, "{}: interrupted; the receiver was told the stream ended\n", tool_name);
      return 128 + stop_signal();  // the shell's convention for "ended by a signal"
    }
    fmt::print(stderr, "{}: error: --timeout {} passed before every run was sent\n", tool_name,
               format_duration(o.timeout));
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"netio_throughput: the sending side of the netio throughput benchmark; pair it with netio_recv.",
               tool_name};
  Options options;
  add_options(app, options);
  add_version_flag(app);
  return parse_and_run(
      app, argc, argv, [&] { validate(app, options); }, [&] { return run(options); });
}
