// SPDX-License-Identifier: MIT
// zmq_reqrep: the ZeroMQ reference for round-trip time (tools/bench/README.md): REQ/REP over
// tcp://, the server (REP) echoes each request.
//
//   zmq_reqrep --server [--port N] [--port-file FILE] [--cpu N] [--timeout D]
//   zmq_reqrep -e tcp://HOST:PORT [-s SIZE] [-n ITERATIONS] [-w WARMUP] [--json] [--cpu N]
#include "bench/common/zmq_util.hpp"
#include "common/cli_options.hpp"
#include "common/termination.hpp"

#include <vector>

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "zmq_reqrep";

using Options = netio::bench::PingPongOptions;

// Receives one message into `message`, checking the deadline every 100 ms (ZMQ_RCVTIMEO).
// Returns false when the deadline passed or Ctrl-C.
bool receive(ZmqSocket& socket, ZmqMessage& message, Clock::time_point deadline) {
  while (zmq_msg_recv(message.get(), socket.get(), 0) < 0) {
    if (!zmq_again()) zmq_check(-1, "zmq_msg_recv");
    if (Clock::now() >= deadline || netio::tools::stop_requested()) return false;
  }
  return true;
}

int run_server(const ZmqContext& context, const Options& o, Clock::time_point deadline) {
  ZmqSocket rep(context, ZMQ_REP);
  rep.set(ZMQ_RCVTIMEO, 100);
  rep.set(ZMQ_LINGER, 0);
  bind_and_announce(rep, tool_name, o.port, o.port_file);
  for (;;) {
    ZmqMessage request;
    if (!receive(rep, request, deadline)) return 0;  // how a server ends
    zmq_check(zmq_msg_send(request.get(), rep.get(), 0), "zmq_msg_send");
  }
}

int run_client(const ZmqContext& context, const Options& o, Clock::time_point deadline) {
  ZmqSocket req(context, ZMQ_REQ);
  req.set(ZMQ_RCVTIMEO, 100);
  req.set(ZMQ_LINGER, 0);
  req.connect(o.endpoint);
  std::vector<char> ping(o.size, 'p');
  measure_round_trips(tool_name, o, [&] {
    zmq_check(zmq_send(req.get(), ping.data(), ping.size(), 0), "zmq_send");
    ZmqMessage reply;
    if (!receive(req, reply, deadline)) throw std::runtime_error("--timeout passed (or interrupted) awaiting a reply");
    if (reply.size() != o.size) throw std::runtime_error("the reply has the wrong size");
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "zmq_reqrep: ZeroMQ REQ/REP round-trip time, the reference for netio_pingpong. Start a server with "
      "--server, then the client.",
      tool_name};
  Options o;
  static constexpr netio::bench::RoleNames names{
      "--server", "Echo requests (REP, binds 127.0.0.1) until --timeout or Ctrl-C", "Server",
      "Client: the server, tcp://HOST:PORT", netio::bench::rtt_json_help};
  netio::bench::add_pingpong_options(app, o, names, "Client: request size");
  try {
    app.parse(argc, argv);
    netio::bench::check_pingpong_options(o, names);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return netio::bench::run_program(tool_name, o, [&] {
    const ZmqContext context;  // after pinning: its I/O thread inherits the CPU
    const auto deadline = deadline_after(o.timeout);
    return o.listener ? run_server(context, o, deadline) : run_client(context, o, deadline);
  });
}
