// SPDX-License-Identifier: MIT
// zmq_pubsub: ZeroMQ publish/subscribe throughput (tools/bench/README.md). The publisher is
// an XPUB socket with ZMQ_XPUB_NODROP (a full subscriber queue blocks the publisher instead
// of dropping, as netio's publish does); it binds, waits for --subscribers subscriptions and
// sends fixed-size messages, ended by an empty one. Each subscriber (SUB, all topics)
// connects and reports msg/s and Gb/s.
//
//   zmq_pubsub --publish [--port N] [--port-file FILE] [--subscribers K] -s SIZE (-n M | -t D) [--json]
//   zmq_pubsub -e tcp://HOST:PORT [--json] [--cpu N] [--timeout D]
#include "bench/common/zmq_stream.hpp"
#include "common/cli_options.hpp"

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "zmq_pubsub";

struct Options : netio::bench::RoleOptions {
  unsigned subscribers = 1;
  std::uint64_t size = 64;
  std::uint64_t messages = 0;
  std::chrono::nanoseconds time{std::chrono::seconds(2)};
};

void wait_for_subscribers(ZmqSocket& xpub, unsigned wanted, Clock::time_point deadline) {
  for (unsigned joined = 0; joined < wanted;) {
    ZmqMessage message;
    if (zmq_msg_recv(message.get(), xpub.get(), 0) < 0) {
      if (!zmq_again()) zmq_check(-1, "zmq_msg_recv (subscription)");
      if (Clock::now() >= deadline || netio::tools::stop_requested()) {
        throw std::runtime_error(fmt::format("only {} of {} subscribers joined before --timeout", joined, wanted));
      }
      continue;
    }
    const auto* data = static_cast<const unsigned char*>(zmq_msg_data(message.get()));
    if (message.size() >= 1 && data[0] == 1) ++joined;  // 1: subscribe, 0: unsubscribe
  }
}

int run(const Options& o) {
  const auto deadline = deadline_after(o.timeout);
  const ZmqContext context;  // after pinning: its I/O thread inherits the CPU
  if (!o.listener) {
    ZmqSocket sub(context, ZMQ_SUB);
    sub.set(ZMQ_RCVTIMEO, 100);
    sub.set(ZMQ_LINGER, 0);
    zmq_check(zmq_setsockopt(sub.get(), ZMQ_SUBSCRIBE, "", 0), "ZMQ_SUBSCRIBE");
    sub.connect(o.endpoint);
    print_throughput(receive_stream(sub, deadline), o.json);
    return 0;
  }
  ZmqSocket xpub(context, ZMQ_XPUB);
  xpub.set(ZMQ_XPUB_NODROP, 1);
  // Every subscriber's subscription reaches us, not only the first of each topic (XPUB passes
  // a duplicate on only when verbose): --subscribers K counts K of them.
  xpub.set(ZMQ_XPUB_VERBOSE, 1);
  xpub.set(ZMQ_SNDTIMEO, 100);
  xpub.set(ZMQ_RCVTIMEO, 100);
  xpub.set(ZMQ_LINGER, static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::max(deadline - Clock::now(), Clock::duration::zero()))
                                            .count()));
  bind_and_announce(xpub, tool_name, o.port, o.port_file);
  wait_for_subscribers(xpub, o.subscribers, deadline);
  const auto result = send_stream(xpub, {o.size, o.messages, o.time, deadline});
  if (o.json)
    print_throughput(result, true);
  else
    fmt::print(stderr, "{}: published {} messages of {} B\n", tool_name, result.messages, o.size);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "zmq_pubsub: ZeroMQ XPUB(NODROP)/SUB throughput. Start the publisher with --publish, then the "
      "subscribers.",
      tool_name};
  Options o;
  static constexpr netio::bench::RoleNames names{
      "--publish", "Publish (XPUB, binds 127.0.0.1) once --subscribers joined", "Publisher",
      "Subscriber: the publisher, tcp://HOST:PORT",
      "Print {\"results\":[{size, messages, bytes, seconds, msgs_per_s, gbps}]}"};
  auto* pub = netio::bench::add_role_options(app, o, names);
  app.add_option("--subscribers", o.subscribers, "Publisher: subscribers to wait for")
      ->capture_default_str()
      ->needs(pub);
  netio::tools::add_size_option(app, "-s,--size", o.size, "Publisher: message size")->needs(pub);
  auto* n = app.add_option("-n,--messages", o.messages, "Publisher: messages to send")->needs(pub);
  netio::tools::add_duration_option(app, "-t,--time", o.time, "Publisher: how long to send (unless -n)")->excludes(n);
  try {
    app.parse(argc, argv);
    netio::bench::require_endpoint(o, names);
    if (o.size == 0) throw CLI::ValidationError("--size", "must be at least 1 byte (0 is the end marker)");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return netio::bench::run_program(tool_name, o, [&] { return run(o); });
}
