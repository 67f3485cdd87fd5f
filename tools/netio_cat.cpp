// SPDX-License-Identifier: MIT
// netio_cat: see what a publisher publishes, or publish records from a file. Its options and
// exit status are documented in docs/man/netio_cat.1.md (man netio_cat).
//
//   netio_cat sub -e PUBLISHER --tags T[,T...] [--format hex|raw|count] [--mode ht|ll]
//                 [-n MESSAGES | -t DURATION] [--allow CIDR[,CIDR...]] [--key-file FILE] [--cpu N[,M]]
//                 [--timeout DURATION]
//   netio_cat pub -e BIND --tag T [--subscribers K] [--record-size SIZE] [--port-file FILE]
//                 [--allow CIDR[,CIDR...]] [--key-file FILE] [--cpu N[,M]] [--timeout DURATION] < file
//   netio_cat --version
#include "cat/record_printer.hpp"
#include "common/cli_options.hpp"
#include "common/cpu_affinity.hpp"
#include "common/deadline.hpp"
#include "common/metrics_option.hpp"
#include "common/peer_access_options.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"
#include "common/units.hpp"

#include "netio/context.hpp"
#include "netio/pubsub/publish_socket.hpp"
#include "netio/pubsub/subscribe_socket.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace netio::tools;
using Clock = std::chrono::steady_clock;
constexpr const char* tool_name = "netio_cat";

struct SubOptions {
  std::string endpoint;
  std::vector<std::uint64_t> tags;
  std::string format = "hex";
  std::string mode = "ht";
  std::optional<std::uint64_t> messages;
  std::optional<std::chrono::nanoseconds> duration;
  std::chrono::nanoseconds timeout{0};
  std::chrono::nanoseconds connect_timeout = netio::default_connect_timeout;
  std::optional<netio::EmulationConfig> emulate;
  MetricsOptions metrics;
  PeerAccess access;  // which publishers may connect back, the key
  CpuChoice cpu;
};

struct PubOptions {
  std::string endpoint;
  std::uint64_t tag = 0;
  std::uint64_t subscribers = 1;
  std::uint64_t record_size = 0;  // 0: one record per line
  std::string port_file;
  std::chrono::nanoseconds timeout{0};
  std::optional<netio::EmulationConfig> emulate;
  MetricsOptions metrics;
  PeerAccess access;  // who may subscribe, the key
  CpuChoice cpu;
};

int run_sub(const SubOptions& o) {
  install_termination_handlers();
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);
  const CatFormat format = o.format == "raw" ? CatFormat::raw : o.format == "count" ? CatFormat::count : CatFormat::hex;
  RecordPrinter printer(format, stdout);
  std::mutex mutex;  // the printer: the loop thread (ll) or this thread (ht)
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);
  netio::ContextOptions context_options;
  context_options.cpu = o.cpu.loop_thread;
  context_options.emulation = o.emulate;
  const MetricsSession metrics(o.metrics);
  netio::Context context(context_options);
  watch_metrics(context);
  netio::pubsub::SubscribeOptions options;
  options.identity.name = "netio_cat";
  options.admission = o.access.admission();
  options.connect_timeout = o.connect_timeout;  // a publisher started later is waited for
  auto on_message = [&](netio::pubsub::Tag tag, std::span<const std::byte> data, const netio::Peer& publisher) {
    std::lock_guard lock(mutex);
    printer.print(tag, data, publisher.name());
  };
  options.on_subscriptions_lost = [](const netio::Endpoint& publisher) {
    fmt::print(stderr, "{}: publisher {} went away; subscribing again when it is back\n", tool_name,
               publisher.to_string());
  };
  options.on_resubscribed = [](const netio::Endpoint& publisher) {
    fmt::print(stderr, "{}: subscribed again to {}\n", tool_name, publisher.to_string());
  };
  netio::pubsub::SubscribeSocket subscriber(context, on_message, options);
  const auto publisher = netio::Endpoint::parse(o.endpoint);
  const auto mode = o.mode == "ll" ? netio::pubsub::Mode::low_latency : netio::pubsub::Mode::high_throughput;
  subscriber.subscribe(publisher, o.tags, mode);  // one request and acknowledgement for all
  fmt::print(stderr, "{}: subscribed to tag(s) {} on {}\n", tool_name, fmt::join(o.tags, ","), publisher.to_string());

  const auto start = Clock::now();
  auto last_interval = start;
  auto done = [&] {
    std::lock_guard lock(mutex);
    return (o.messages && printer.messages() >= *o.messages) || (o.duration && Clock::now() - start >= *o.duration);
  };
  while (!stop_requested() && !deadline.expired() && !done()) {
    if (mode == netio::pubsub::Mode::high_throughput) {
      if (auto m = subscriber.recv(std::chrono::milliseconds(50))) {
        std::lock_guard lock(mutex);
        printer.print(m->tag(), m->data(), m->publisher().name());
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (Clock::now() - last_interval >= std::chrono::seconds(1)) {
      std::lock_guard lock(mutex);
      printer.print_interval(std::chrono::duration<double>(Clock::now() - start).count());
      last_interval = Clock::now();
    }
  }
  if (stop_requested() && mode == netio::pubsub::Mode::high_throughput) {
    // Stopped by a signal: what already arrived is printed too, not dropped with the socket.
    while (auto m = subscriber.recv(std::chrono::milliseconds(0))) {
      std::lock_guard lock(mutex);
      printer.print(m->tag(), m->data(), m->publisher().name());
    }
  }
  std::lock_guard lock(mutex);
  printer.print_totals();
  std::fflush(stdout);
  if (stop_requested()) return 128 + stop_signal();
  if (deadline.expired() && !done()) {
    fmt::print(stderr, "{}: error: --timeout {} passed\n", tool_name, format_duration(o.timeout));
    return exit_failure;
  }
  return exit_ok;
}

int run_pub(const PubOptions& o) {
  install_termination_handlers();
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);
  netio::ContextOptions context_options;
  context_options.cpu = o.cpu.loop_thread;
  context_options.emulation = o.emulate;
  const MetricsSession metrics(o.metrics);
  netio::Context context(context_options);
  watch_metrics(context);
  netio::pubsub::PublishOptions options;
  options.identity.name = "netio_cat";
  options.admission = o.access.admission();
  options.flush_timeout = std::chrono::milliseconds(10);
  netio::pubsub::PublishSocket publisher(context, netio::Endpoint::parse(o.endpoint), options);
  fmt::print(stderr, "{}: publishing tag {} on {}, waiting for {} subscriber(s)\n", tool_name, o.tag,
             publisher.local_endpoint().to_string(), o.subscribers);
  if (!o.port_file.empty()) write_port_file(o.port_file, publisher.local_endpoint().port);
  while (!publisher.wait_for_subscribers(o.subscribers, std::chrono::milliseconds(100))) {
    if (stop_requested()) return 128 + stop_signal();
    if (deadline.expired()) {
      fmt::print(stderr, "{}: error: --timeout {} passed before {} subscriber(s) came\n", tool_name,
                 format_duration(o.timeout), o.subscribers);
      return exit_failure;
    }
  }
  std::uint64_t records = 0;
  std::vector<char> record;
  if (o.record_size == 0) {
    // One record per line, its newline included: `netio_cat sub --format raw` gives the file back.
    std::string line;
    while (!stop_requested() && std::getline(std::cin, line)) {
      if (!std::cin.eof()) line += '\n';
      publisher.publish(o.tag, std::as_bytes(std::span(line)));
      ++records;
    }
  } else {
    record.resize(o.record_size);
    while (!stop_requested()) {
      const std::size_t n = std::fread(record.data(), 1, record.size(), stdin);
      if (n == 0) break;
      publisher.publish(o.tag, std::as_bytes(std::span(record.data(), n)));  // the last one may be shorter
      ++records;
    }
  }
  publisher.flush();
  // Let what was published reach the subscribers before the connections close.
  while (publisher.pages().pages_in_use() > 0 && !deadline.expired())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  fmt::print(stderr, "{}: published {} record(s) under tag {}\n", tool_name, records, o.tag);
  return stop_requested() ? 128 + stop_signal() : exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"netio_cat: print what a netio publisher publishes (sub), or publish records from stdin (pub).",
               tool_name};
  app.require_subcommand(1);
  add_version_flag(app);
  SubOptions sub_options;
  auto* sub = app.add_subcommand("sub", "Subscribe to tags on a publisher and print what arrives");
  sub->add_option("-e,--endpoint", sub_options.endpoint, std::string("The publisher: ") + netio::tools::endpoint_forms)
      ->required();
  sub->add_option("--tags", sub_options.tags, "Tags to subscribe to (64-bit integers)")
      ->delimiter(',')
      ->type_name("T[,T...]")
      ->required();
  sub->add_option("--format", sub_options.format,
                  "hex: a line per message (tag, size, publisher, bytes in hex); raw: the payloads' bytes as they are; "
                  "count: messages per tag each second (stderr) and totals at the end (stdout)")
      ->check(CLI::IsMember({"hex", "raw", "count"}))
      ->capture_default_str();
  sub->add_option("--mode", sub_options.mode,
                  "ht: high-throughput subscription (pages); ll: low-latency (a message at once)")
      ->check(CLI::IsMember({"ht", "ll"}))
      ->capture_default_str();
  auto* messages = sub->add_option("-n,--messages", sub_options.messages, "Stop after this many messages");
  auto* duration = add_duration_option(*sub, "-t,--time", sub_options.duration, "Stop after this long");
  messages->excludes(duration);
  add_cpu_option(*sub, sub_options.cpu);
  add_timeout_option(*sub, sub_options.timeout);
  add_connect_timeout_option(*sub, sub_options.connect_timeout);
  add_emulate_option(*sub, sub_options.emulate);
  add_metrics_options(*sub, sub_options.metrics);
  add_peer_access_options(*sub, sub_options.access, /*listens=*/true);
  sub->footer(std::string(units_help) +
              "\n\nRuns until -n/-t, Ctrl-C or --timeout; a publisher that restarts is "
              "subscribed to again.\nExit status: 0 done, 1 failure or --timeout, 128+N on signal N.");

  PubOptions pub_options;
  auto* pub = app.add_subcommand("pub", "Publish records read from stdin under one tag");
  pub->add_option("-e,--endpoint", pub_options.endpoint,
                  fmt::format("Where to bind: {}; port 0 picks one", netio::tools::endpoint_forms))
      ->required();
  pub->add_option("--tag", pub_options.tag, "The tag to publish under (a 64-bit integer)")->required();
  pub->add_option("--subscribers", pub_options.subscribers,
                  "Wait for this many subscribers (acknowledged) before reading stdin, so none misses a record")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_size_option(*pub, "--record-size", pub_options.record_size,
                  "Records of this many bytes (the last may be shorter); 0: one record per line, newline included");
  pub->add_option("--port-file", pub_options.port_file, "Write the port bound to FILE once listening")
      ->type_name("FILE");
  add_cpu_option(*pub, pub_options.cpu);
  add_timeout_option(*pub, pub_options.timeout);
  add_emulate_option(*pub, pub_options.emulate);
  add_metrics_options(*pub, pub_options.metrics);
  add_peer_access_options(*pub, pub_options.access, /*listens=*/true);
  pub->footer(std::string(units_help) +
              "\n\nExit status: 0 when stdin was published, 1 on failure or --timeout, 128+N on signal N.");
  return parse_and_run(app, argc, argv, {},
                       [&] { return sub->parsed() ? run_sub(sub_options) : run_pub(pub_options); });
}
