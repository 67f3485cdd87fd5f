// SPDX-License-Identifier: MIT
// zmq_throughput: the ZeroMQ reference for throughput (tools/bench/README.md): PUSH/PULL over
// tcp:// (or, with --bind, any ZeroMQ transport such as ipc://), fixed-size messages, ended by
// an empty message. The receiver (PULL) binds and reports msg/s and Gb/s of payload; the
// sender (PUSH) connects.
//
//   zmq_throughput --recv [--port N | --bind ENDPOINT] [--port-file FILE] [--json] [--cpu N] [--timeout D]
//   zmq_throughput -e ENDPOINT -s SIZE (-n MESSAGES | -t DURATION) [--json] [--cpu N]
#include "bench/common/zmq_stream.hpp"
#include "common/cli_options.hpp"

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "zmq_throughput";

struct Options : netio::bench::RoleOptions {
  std::uint64_t size = 64;
  std::uint64_t messages = 0;
  std::chrono::nanoseconds time{std::chrono::seconds(2)};
  std::string bind;  // the receiver's endpoint, instead of tcp://127.0.0.1:PORT
};

int run(const Options& o) {
  const auto deadline = deadline_after(o.timeout);
  const ZmqContext context;  // after pinning: its I/O thread inherits the CPU
  if (o.listener) {
    ZmqSocket pull(context, ZMQ_PULL);
    pull.set(ZMQ_RCVTIMEO, 100);
    pull.set(ZMQ_LINGER, 0);
    if (o.bind.empty())
      bind_and_announce(pull, tool_name, o.port, o.port_file);
    else
      bind_and_announce(pull, tool_name, o.bind, o.port_file);
    print_throughput(receive_stream(pull, deadline), o.json);
    return 0;
  }
  ZmqSocket push(context, ZMQ_PUSH);
  push.set(ZMQ_SNDTIMEO, 100);
  // Closing flushes what is queued, bounded by the rest of --timeout.
  push.set(ZMQ_LINGER, static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::max(deadline - Clock::now(), Clock::duration::zero()))
                                            .count()));
  DisconnectWatch receiver_gone(context, push);
  push.connect(o.endpoint);
  const auto result = send_stream(push, {o.size, o.messages, o.time, deadline});
  receiver_gone.wait(deadline);  // the receiver has read everything then
  if (o.json)
    print_throughput(result, true);
  else
    fmt::print(stderr, "{}: sent {} messages of {} B\n", tool_name, result.messages, o.size);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "zmq_throughput: ZeroMQ PUSH/PULL throughput, the reference for netio_throughput/netio_recv. Start "
      "the receiver with --recv, then the sender.",
      tool_name};
  Options o;
  static constexpr netio::bench::RoleNames names{
      "--recv", "Receive (PULL, binds 127.0.0.1 or --bind) until the sender's end, then report", "Receiver",
      "Sender: the receiver, tcp://HOST:PORT (or the receiver's --bind endpoint)",
      "Print {\"results\":[{size, messages, bytes, seconds, msgs_per_s, gbps}]}"};
  auto* recv = netio::bench::add_role_options(app, o, names);
  app.add_option("--bind", o.bind,
                 "Receiver: bind this ZeroMQ endpoint (e.g. ipc://@name, an abstract Unix socket) instead of "
                 "tcp://127.0.0.1:PORT; --port-file then gets 0 once bound")
      ->needs(recv)
      ->excludes("--port");
  netio::tools::add_size_option(app, "-s,--size", o.size, "Sender: message size")->excludes(recv);
  auto* n = app.add_option("-n,--messages", o.messages, "Sender: messages to send")->excludes(recv);
  netio::tools::add_duration_option(app, "-t,--time", o.time, "Sender: how long to send (unless -n)")->excludes(n);
  try {
    app.parse(argc, argv);
    netio::bench::require_endpoint(o, names);
    if (o.size == 0) throw CLI::ValidationError("--size", "must be at least 1 byte (0 is the end marker)");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return netio::bench::run_program(tool_name, o, [&] { return run(o); });
}
