// SPDX-License-Identifier: MIT
// netio_pingpong --server trusts no client: a client that names, for its pongs, a port that
// accepts connections but never speaks (or a client that never takes its answers) must not
// hold up the welcome of anyone else. And neither side's main thread wakes while pings fly:
// with --cpu N it shares the core of a busy-polling loop, which each wake-up preempts.
#include "common/control_frame.hpp"
#include "common/deadline.hpp"
#include "pingpong/pingpong_client.hpp"
#include "pingpong/pingpong_server.hpp"

#include "netio/context.hpp"
#include "netio/emulation.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/loopback_port.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

TEST_CASE("netio_pingpong --server: a client whose pong port never answers holds up nobody", "[tools][pingpong]") {
  const auto base = netio::Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context server_context;
  std::promise<netio::Endpoint> listening;
  auto listening_at = listening.get_future();
  std::atomic<bool> client_done{false};
  std::thread server([&] {
    netio::tools::PingpongServerCallbacks callbacks;
    callbacks.on_listening = [&](const netio::Endpoint& at) { listening.set_value(at); };
    callbacks.should_stop = [&] { return client_done.load(); };
    netio::tools::run_pingpong_server(server_context, base, netio::tools::Deadline(8s), callbacks);
  });
  const netio::Endpoint at = listening_at.get();

  // Two strangers ask for their pongs on a port that never speaks: connecting back to them
  // takes the server's whole connect-back timeout (5 s) each.
  const netio::test::LoopbackPort silent(netio::test::LoopbackPort::Kind::silent);
  netio::Context strangers_context;
  std::vector<std::unique_ptr<netio::LowLatencySendSocket>> strangers;
  for (std::uint64_t session = 1; session <= 2; ++session) {
    auto& stranger = strangers.emplace_back(std::make_unique<netio::LowLatencySendSocket>(strangers_context, at));
    stranger->send(
        netio::tools::encode_control_frame({netio::tools::ControlKind::ping_hello, silent.port(), session, 64}));
  }
  std::this_thread::sleep_for(200ms);  // their hellos first

  // A real client is welcomed and served at once, in less than its 4 s connect timeout.
  netio::Context client_context;
  netio::tools::PingpongClientOptions options;
  options.server = at;
  options.iterations = 200;
  options.warmup = 10;
  options.connect_timeout = 4s;
  netio::tools::PingpongClientResult result;
  CHECK_NOTHROW(result = netio::tools::run_pingpong_client(client_context, options, netio::tools::Deadline(30s)));
  CHECK_FALSE(result.error);
  CHECK(result.rtt_us.size() == 200);
  client_done = true;  // the strangers' connections back may still be pending: they hold up nobody
  server.join();
}

namespace {

// How often the calling thread has gone to sleep (voluntary context switches) so far.
long sleeps_of_this_thread() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nvcsw;
}

}  // namespace

TEST_CASE("netio_pingpong: neither main thread wakes while the pings fly", "[tools][pingpong]") {
  // Round trips of at least 4 ms (the client's pings delayed), 500 of them: two seconds of
  // pinging, in which a main thread that looked around every 100 ms would wake 20 times
  // more. Sleeping until the run ends, each wakes only for the steps of a run, 7-9 times
  // (connect, welcome, end, goodbye; on the server the client's hello, goodbye and leaving,
  // the stop, and the loop's answers to run_sync()).
  constexpr long most_sleeps = 14;
  netio::Context server_context;
  std::promise<netio::Endpoint> listening;
  auto listening_at = listening.get_future();
  std::atomic<bool> client_done{false};
  long server_sleeps = 0;
  std::thread server([&] {
    netio::tools::PingpongServerCallbacks callbacks;
    long before = 0;
    callbacks.on_listening = [&](const netio::Endpoint& at) {
      before = sleeps_of_this_thread();
      listening.set_value(at);
    };
    callbacks.should_stop = [&] { return client_done.load(); };
    netio::tools::run_pingpong_server(server_context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
                                      netio::tools::Deadline(20s), callbacks);
    server_sleeps = sleeps_of_this_thread() - before;
  });

  netio::ContextOptions delayed;
  delayed.emulation = netio::parse_emulation_spec("delay=4ms");
  netio::Context client_context(delayed);
  netio::tools::PingpongClientOptions options;
  options.server = listening_at.get();
  options.iterations = 500;
  options.warmup = 0;
  options.size = 8;
  const auto started = std::chrono::steady_clock::now();
  const long before = sleeps_of_this_thread();
  const auto result = netio::tools::run_pingpong_client(client_context, options, netio::tools::Deadline(20s));
  const long client_sleeps = sleeps_of_this_thread() - before;
  const auto took = std::chrono::steady_clock::now() - started;
  client_done = true;
  server.join();

  REQUIRE_FALSE(result.error);
  REQUIRE(result.rtt_us.size() == 500);
  REQUIRE(took >= 2s);  // what makes most_sleeps a test
  INFO("the client's main thread slept " << client_sleeps << " times, the server's " << server_sleeps);
  CHECK(client_sleeps <= most_sleeps);
  CHECK(server_sleeps <= most_sleeps);
}
