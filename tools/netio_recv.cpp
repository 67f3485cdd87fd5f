// SPDX-License-Identifier: MIT
// netio_recv: the receiving side of the throughput benchmark. Its options, JSON keys and exit
// status are documented in docs/man/netio_recv.1.md (man netio_recv).
//
//   netio_recv -e ENDPOINT [--mode ht|ll] [-n MESSAGES | -t DURATION] [--verify] [--json]
//              [--senders K] [--report-interval DURATION] [--port-file FILE] [--cpu N[,M]] [--timeout DURATION]
//   netio_recv --subscribe -e PUBLISHER --tags T[,T...] [--mode ll|ht] [...the same]
//
// Listens (or subscribes to netio_throughput --publish), reports each interval on stderr
// (like iperf3) and prints a summary per message size when the senders end their streams:
// one stream per connection, each counted and verified on its own; the run ends when
// --senders streams have ended.
#include "common/cli_options.hpp"
#include "common/cpu_affinity.hpp"
#include "common/deadline.hpp"
#include "common/json_writer.hpp"
#include "common/metrics_option.hpp"
#include "common/peer_access_options.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"
#include "common/units.hpp"
#include "throughput/bench_receiver.hpp"
#include "throughput/bench_subscriber.hpp"

#include "netio/context.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>

namespace {

using namespace netio::tools;
constexpr const char* tool_name = "netio_recv";

struct Options {
  std::string endpoint;
  std::string mode = "ht";
  std::optional<std::uint64_t> messages;
  std::optional<std::chrono::nanoseconds> duration;
  bool verify = false;
  bool json = false;
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  std::string port_file;
  CpuChoice cpu;
  std::optional<netio::EmulationConfig> emulate;
  MetricsOptions metrics;
  PeerAccess access;
  std::chrono::nanoseconds timeout{0};
  std::size_t senders = 1;
  bool subscribe = false;  // publish/subscribe: -e is the publisher
  std::vector<std::uint64_t> tags;
  std::chrono::nanoseconds connect_timeout = netio::default_connect_timeout;  // --subscribe
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("-e,--endpoint", o.endpoint,
                 fmt::format("Where to listen: {}; port 0 picks a free port (printed on stderr and written to "
                             "--port-file)",
                             endpoint_forms))
      ->required();
  app.add_option("--mode", o.mode,
                 "ht: high-throughput sockets (pages, recv() on a thread of its own); ll: "
                 "low-latency sockets (a callback per message). Must match the sender's --mode")
      ->check(CLI::IsMember({"ht", "ll"}))
      ->capture_default_str();
  auto* messages = app.add_option("-n,--messages", o.messages,
                                  "Stop after this many data messages (over all sizes), without waiting for the "
                                  "end of the stream");
  auto* duration = add_duration_option(app, "-t,--time", o.duration,
                                       "Stop this long after the first message, without waiting for the end of "
                                       "the stream");
  messages->excludes(duration);
  app.add_flag("--verify", o.verify,
               "Check every message: report lost, duplicated and corrupt ones per size (at 8-15 B the check is "
               "16 bits wide; man netio_recv)");
  app.add_flag("--json", o.json,
               "Print one JSON document on stdout: {\"results\":[{size, messages, bytes, seconds, msgs_per_s, gbps, "
               "lost, duplicated, corrupt}]}; lost/duplicated/corrupt are null without --verify");
  app.add_option("--senders", o.senders,
                 "How many senders' streams to receive: each connection is a stream of its own, counted and verified "
                 "on its own; the run ends when this many have ended (a connection that never begins a run is no "
                 "stream and ends nothing: its control messages are ignored, logged once and counted)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  add_duration_option(app, "--report-interval", o.interval, "Period of the progress report on stderr (0: none)");
  // The old name of --report-interval (netio_tsbench's --interval means something else), kept
  // for one release: hidden from --help, and a note when used.
  add_duration_option(app, "--interval", o.interval, "")->group("")->each([](const std::string&) {
    fmt::print(stderr, "netio_recv: --interval is deprecated and goes in the next release: use --report-interval\n");
  });
  app.add_option("--port-file", o.port_file,
                 "Write the port listened on to FILE once listening (for scripts using port 0)")
      ->type_name("FILE");
  add_cpu_option(app, o.cpu);
  add_emulate_option(app, o.emulate);
  add_metrics_options(app, o.metrics);
  add_peer_access_options(app, o.access, true);
  add_timeout_option(app, o.timeout);
  auto* subscribe = app.add_flag("--subscribe", o.subscribe,
                                 "Subscribe to netio_throughput --publish at -e (the publisher's endpoint) instead of "
                                 "listening; --mode picks the subscription's mode; --verify checks every tag's stream");
  app.add_option("--tags", o.tags, "With --subscribe: the tags to subscribe to (64-bit integers)")
      ->delimiter(',')
      ->type_name("T[,T...]")
      ->needs(subscribe);
  add_connect_timeout_option(app, o.connect_timeout)->needs(subscribe);
  app.footer(std::string(units_help) +
             "\n\nThe receiver's time for a size runs from the arrival of the run's begin marker to that of its\n"
             "end marker. Exit status: 0 when the stream ended (or -n/-t was reached) and, with --verify, all was\n"
             "intact; 3 when --verify found lost, duplicated or corrupt messages (or messages outside any run);\n"
             "1 on failure (cannot listen, --timeout, a sender vanished before ending its stream, a stream that\n"
             "began did not end properly); 128+N when\n"
             "stopped by signal N (Ctrl-C); other non-zero values for bad arguments.");
}

void validate(const Options& o) {
  if (o.subscribe && o.tags.empty())
    throw CLI::ValidationError("--tags", "--subscribe needs the tags: --tags T[,T...]");
  if (o.subscribe && o.senders != 1) {
    throw CLI::ValidationError("--senders", "does not apply to --subscribe (one publisher, one stream per tag)");
  }
  if (o.subscribe && !o.port_file.empty()) {
    throw CLI::ValidationError("--port-file", "does not apply to --subscribe (the subscriber connects to -e)");
  }
  if (o.messages && *o.messages == 0) throw CLI::ValidationError("--messages", "must be at least 1");
  if (o.duration && *o.duration <= std::chrono::nanoseconds::zero()) {
    throw CLI::ValidationError("--time", "must be longer than 0");
  }
}

void print_interval(const IntervalReport& r) {
  const double seconds = std::max(r.to - r.from, 1e-9);
  fmt::print(stderr, "[{:>7.2f}-{:>7.2f} s] {:>9}  {:>10} msg  {:>12.0f} msg/s  {:>8.3f} Gb/s\n", r.from, r.to,
             format_size(r.size), r.messages, static_cast<double>(r.messages) / seconds,
             static_cast<double>(r.bytes) * 8 / seconds / 1e9);
}

bool verification_failed(const BenchReceiverReport& report) {
  const bool runs_bad = std::any_of(report.results.begin(), report.results.end(), [](const ThroughputResult& r) {
    return r.verification && !r.verification->clean();
  });
  return runs_bad || report.stray_messages > 0;
}

int exit_status(const Options& o, ReceiveEnd end, bool verification_bad);

// --subscribe: the pub/sub benchmark's subscriber (throughput/bench_subscriber.hpp).
// The context of either mode: the loop thread pinned as --cpu asks, links shaped by --emulate.
netio::ContextOptions context_options(const Options& o) {
  netio::ContextOptions options;
  options.cpu = o.cpu.loop_thread;
  options.emulation = o.emulate;
  return options;
}

int run_subscriber(const Options& o) {
  install_termination_handlers();
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);
  BenchSubscriberOptions subscriber;
  subscriber.publisher = netio::Endpoint::parse(o.endpoint);
  subscriber.tags.assign(o.tags.begin(), o.tags.end());
  subscriber.mode = o.mode == "ll" ? netio::pubsub::Mode::low_latency : netio::pubsub::Mode::high_throughput;
  subscriber.verify = o.verify;
  subscriber.max_messages = o.messages;
  subscriber.duration = o.duration;
  subscriber.interval = o.interval;
  subscriber.consumer_cpu = o.cpu.tool_thread;
  subscriber.admission = o.access.admission();
  subscriber.connect_timeout = o.connect_timeout;  // --subscribe: the publishers that may connect back
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);
  netio::Context context(context_options(o));
  watch_metrics(context);
  BenchReceiverCallbacks callbacks;
  callbacks.on_listening = [&](const netio::Endpoint& publisher) {
    fmt::print(stderr, "{}: subscribed to {} on {} ({} mode{})\n", tool_name, fmt::join(o.tags, ","),
               publisher.to_string(), o.mode, o.verify ? ", verifying" : "");
  };
  callbacks.on_interval = print_interval;
  const BenchSubscriberReport report = run_bench_subscriber(context, subscriber, deadline, callbacks);
  if (o.json) {
    // "results" merges the tags (the same keys as without --subscribe); "per_tag" has each
    // tag's own, verification included.
    JsonWriter json;
    json.begin_object().key("results");
    write_results_array(json, report.merged, VerificationColumns::reported);
    json.key("per_tag").begin_array();
    for (const auto& tag : report.per_tag) {
      json.begin_object().field("tag", tag.tag).key("results");
      write_results_array(json, tag.results, VerificationColumns::reported);
      json.end_object();
    }
    json.end_array().end_object();
    fmt::print("{}\n", json.str());
  } else if (report.per_tag.size() == 1) {
    fmt::print("{}", results_table(report.merged, VerificationColumns::reported));
  } else {
    for (const auto& tag : report.per_tag) {
      fmt::print("tag {}:\n{}", tag.tag, results_table(tag.results, VerificationColumns::reported));
    }
    fmt::print("all tags:\n{}", results_table(report.merged, VerificationColumns::reported));
  }
  for (const std::string& anomaly : report.anomalies)
    fmt::print(stderr, "{}: protocol anomaly: {}\n", tool_name, anomaly);
  if (report.dropped > 0)
    fmt::print(stderr, "{}: the publisher dropped {} messages for this subscriber\n", tool_name, report.dropped);
  bool bad = report.stray_messages > 0;
  for (const auto& tag : report.per_tag) {
    for (const auto& r : tag.results) {
      if (r.verification && !r.verification->clean()) {
        bad = true;
        fmt::print(stderr, "{}: tag {}, {} B: {} lost, {} duplicated, {} corrupt\n", tool_name, tag.tag, r.size,
                   r.verification->lost, r.verification->duplicated, r.verification->corrupt);
      }
    }
  }
  return exit_status(o, report.end, bad);
}

int run(const Options& o) {
  const MetricsSession metrics(o.metrics);
  if (o.subscribe) return run_subscriber(o);
  install_termination_handlers();
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);

  BenchReceiverOptions receiver;
  receiver.local = netio::Endpoint::parse(o.endpoint);
  receiver.mode = o.mode == "ll" ? SocketMode::low_latency : SocketMode::high_throughput;
  receiver.verify = o.verify;
  receiver.max_messages = o.messages;
  receiver.duration = o.duration;
  receiver.interval = o.interval;
  receiver.admission = o.access.admission();
  // The thread doing the per-message work is the "tool's thread" of --cpu: the recv()
  // thread in ht mode; in ll mode the callbacks run on the event-loop thread.
  receiver.consumer_cpu = o.cpu.tool_thread;
  receiver.senders = o.senders;
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);

  netio::Context context(context_options(o));
  watch_metrics(context);

  BenchReceiverCallbacks callbacks;
  callbacks.on_listening = [&](const netio::Endpoint& local) {
    fmt::print(stderr, "{}: listening on {} ({} mode{})\n", tool_name, local.to_string(), o.mode,
               o.verify ? ", verifying" : "");
    if (!o.port_file.empty()) write_port_file(o.port_file, local.port);
  };
  callbacks.on_interval = print_interval;
  const BenchReceiverReport report = run_bench_receiver(context, receiver, deadline, callbacks);

  if (o.json) {
    JsonWriter json;
    write_results_json(json, report.results, VerificationColumns::reported);
    fmt::print("{}\n", json.str());
  } else if (report.results.empty()) {
    // Not an empty table: say why there is nothing to show.
    fmt::print("no data received{}\n", report.end == ReceiveEnd::signal ? " (stopped before the first message)"
                                       : report.end == ReceiveEnd::timeout
                                           ? " (--timeout passed before the first message)"
                                           : "");
  } else if (report.per_stream.size() <= 1) {
    fmt::print("{}", results_table(report.results, VerificationColumns::reported));
  } else {
    for (const auto& stream : report.per_stream) {
      fmt::print("from {}{}:\n{}", stream.peer, stream.ended ? "" : " (stream not ended)",
                 results_table(stream.results, VerificationColumns::reported));
    }
    fmt::print("all {} streams:\n{}", report.per_stream.size(),
               results_table(report.results, VerificationColumns::reported));
  }
  for (const auto& stream : report.per_stream) {
    for (const auto& r : stream.results) {
      if (r.verification && !r.verification->clean()) {
        fmt::print(stderr, "{}: from {}, {} B: {} lost, {} duplicated, {} corrupt\n", tool_name, stream.peer, r.size,
                   r.verification->lost, r.verification->duplicated, r.verification->corrupt);
      }
    }
  }
  for (const std::string& anomaly : report.anomalies)
    fmt::print(stderr, "{}: protocol anomaly: {}\n", tool_name, anomaly);
  if (report.stranger_messages > 0) {
    fmt::print(stderr, "{}: ignored {} messages from connections that never began a run (not netio_throughput)\n",
               tool_name, report.stranger_messages);
  }
  if (report.stranger_controls > 0) {
    fmt::print(stderr, "{}: ignored {} control messages from connections that never began a run\n", tool_name,
               report.stranger_controls);
  }
  if (report.stray_messages > 0) {
    fmt::print(stderr, "{}: {} messages arrived outside any run (is the sender netio_throughput?)\n", tool_name,
               report.stray_messages);
  }
  for (const std::string& peer : report.truncated_streams) {
    fmt::print(stderr, "{}: error: the stream from {} did not end properly (no end of stream, or a run cut short)\n",
               tool_name, peer);
  }
  if (!report.truncated_streams.empty() && report.end == ReceiveEnd::end_of_stream) return exit_failure;
  return exit_status(o, report.end, verification_failed(report));
}

int exit_status(const Options& o, ReceiveEnd end, bool verification_bad) {
  switch (end) {
    case ReceiveEnd::signal: fmt::print(stderr, "{}: interrupted\n", tool_name); return 128 + stop_signal();
    case ReceiveEnd::timeout:
      fmt::print(stderr, "{}: error: --timeout {} passed before the end of the stream\n", tool_name,
                 format_duration(o.timeout));
      return exit_failure;
    case ReceiveEnd::sender_gone:
      fmt::print(stderr, "{}: error: {} disconnected without ending {}\n", tool_name,
                 o.subscribe ? "the publisher" : "a sender", o.subscribe ? "its streams" : "its stream");
      return exit_failure;
    case ReceiveEnd::end_of_stream:
    case ReceiveEnd::message_limit:
    case ReceiveEnd::time_limit: break;
  }
  if (o.verify && verification_bad) {
    fmt::print(stderr, "{}: verification failed: messages were lost, duplicated or corrupt\n", tool_name);
    return exit_verification_failed;
  }
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"netio_recv: the receiving side of the netio throughput benchmark; pair it with netio_throughput.",
               tool_name};
  Options options;
  add_options(app, options);
  add_version_flag(app);
  return parse_and_run(
      app, argc, argv, [&] { validate(options); }, [&] { return run(options); });
}
