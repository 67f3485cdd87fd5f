// SPDX-License-Identifier: MIT
// tcp_pingpong: the raw-TCP reference for round-trip time (tools/bench/README.md). One
// connection, TCP_NODELAY; the server echoes what it reads. Blocking recv()/send(), or with
// --busy-poll non-blocking recv() in a spin (burns a core on each side, like
// netio_pingpong --busy-poll). --one-way: pings and pongs on two connections, each carrying
// data one way only, as netio's send/receive sockets do; the receiving end of each then
// sends pure ACKs, which a single two-way connection piggybacks on its replies.
//
//   tcp_pingpong --server [--port N] [--port-file FILE] [--busy-poll] [--one-way] [--cpu N] [--timeout D]
//   tcp_pingpong -e tcp://HOST:PORT [-s SIZE] [-n ITERATIONS] [-w WARMUP] [--busy-poll] [--one-way] [--json] [--cpu N]
#include "bench/common/bench_common.hpp"
#include "common/cli_options.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"

#include <fmt/format.h>

#include <vector>

namespace {

using namespace netio::bench;
constexpr const char* tool_name = "tcp_pingpong";

struct Options : netio::bench::PingPongOptions {
  bool busy_poll = false;
  bool one_way = false;  // pings on one connection, pongs on a second one
};

int run_server(const Options& o) {
  std::uint16_t port = 0;
  const Fd listener = listen_loopback(o.port, port);
  fmt::print(stderr, "{}: listening on 127.0.0.1:{}{}\n", tool_name, port, o.busy_poll ? " (busy polling)" : "");
  if (!o.port_file.empty()) netio::tools::write_port_file(o.port_file, port);
  const auto deadline = deadline_after(o.timeout);
  std::vector<char> buffer(1 << 20);
  // Clients one after another, until the deadline or Ctrl-C.
  while (Clock::now() < deadline && !netio::tools::stop_requested()) {
    Fd s;
    try {
      s = accept_one(listener, deadline);
    } catch (const std::runtime_error&) {
      break;
    }
    prepare_pingpong_socket(s, o.busy_poll);
    Fd back;  // --one-way: the client's second connection carries the pongs
    try {
      if (o.one_way) {
        back = accept_one(listener, deadline);
        prepare_pingpong_socket(back, o.busy_poll);
      }
      const Fd& out = o.one_way ? back : s;
      for (;;) {
        const std::size_t n = read_some(s, buffer.data(), buffer.size(), o.busy_poll, deadline);
        if (n == 0) break;
        write_all(out, buffer.data(), n, deadline);
      }
    } catch (const std::runtime_error& e) {
      if (Clock::now() >= deadline || netio::tools::stop_requested()) break;
      fmt::print(stderr, "{}: client dropped: {}\n", tool_name, e.what());
    }
  }
  return 0;
}

int run_client(const Options& o) {
  const HostPort where = parse_tcp_endpoint(o.endpoint);
  const Fd s = connect_to(where.host, where.port);
  prepare_pingpong_socket(s, o.busy_poll);
  Fd back;  // --one-way: the server answers on this one
  if (o.one_way) {
    back = connect_to(where.host, where.port);
    prepare_pingpong_socket(back, o.busy_poll);
  }
  const Fd& in = o.one_way ? back : s;
  const auto deadline = deadline_after(o.timeout);
  std::vector<char> ping(o.size, 'p');
  std::vector<char> pong(o.size);
  measure_round_trips(tool_name, o, [&] {
    write_all(s, ping.data(), ping.size(), deadline);
    for (std::size_t got = 0; got < o.size;) {
      const std::size_t n = read_some(in, pong.data() + got, o.size - got, o.busy_poll, deadline);
      if (n == 0) throw std::runtime_error("the server closed the connection");
      got += n;
    }
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tcp_pingpong: raw TCP round-trip time (TCP_NODELAY), the reference for netio_pingpong. Start a "
      "server with --server, then the client.",
      tool_name};
  Options o;
  static constexpr netio::bench::RoleNames names{"--server", "Echo what clients send, one client after another",
                                                 "Server", "Client: the server, tcp://HOST:PORT",
                                                 netio::bench::rtt_json_help};
  netio::bench::add_pingpong_options(app, o, names, "Client: ping size");
  app.add_flag("--busy-poll", o.busy_poll, "Spin on non-blocking recv() instead of blocking (burns a core)");
  app.add_flag("--one-way", o.one_way,
               "Pings and pongs on two connections that carry data one way each, like netio's send and receive "
               "sockets (both sides must say it)");
  try {
    app.parse(argc, argv);
    netio::bench::check_pingpong_options(o, names);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return netio::bench::run_program(tool_name, o, [&] { return o.listener ? run_server(o) : run_client(o); });
}
