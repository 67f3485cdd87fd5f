// SPDX-License-Identifier: MIT
// abort(): the close for a receiver known to be gone. A send waiting for room (the receiver
// takes nothing) fails at once with Errc::closed naming the reason, instead of waiting out
// send_timeout; later sends fail the same way. Both socket kinds, on every back-end; and
// one destination of a MultiDestinationSendSocket.
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/multi_destination_send_socket.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;

namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  netio::Errc code{};
  std::string what;
  Clock::time_point ended_at{};  // when the send returned or threw
};

// Sends with `try_send` until it has refused for 500 ms on end: the receiver takes nothing,
// and kernel buffers, its credits and the sender's buffers are full.
bool fill(const std::function<bool()>& try_send) {
  const auto until = Clock::now() + 30s;
  auto refused_since = Clock::now();
  bool refusing = false;
  while (Clock::now() < until) {
    if (try_send()) {
      refusing = false;
      continue;
    }
    if (!refusing) refused_since = Clock::now();
    refusing = true;
    if (Clock::now() - refused_since > 500ms) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Runs `blocked_send` (which must wait: the receiver takes nothing) on a thread, aborts with
// `abort` once it has waited 300 ms, and returns how the send ended.
Outcome abort_while_sending(const std::function<void()>& blocked_send, const std::function<void()>& abort) {
  std::promise<Outcome> ended;
  Clock::time_point aborted_at;
  std::thread sender([&] {
    Outcome outcome;
    try {
      blocked_send();
      outcome.what = "the send returned normally";
    } catch (const netio::Error& e) {
      outcome.code = static_cast<netio::Errc>(e.code().value());
      outcome.what = e.what();
    }
    outcome.ended_at = Clock::now();
    ended.set_value(outcome);
  });
  auto result = ended.get_future();
  const bool waited = result.wait_for(300ms) == std::future_status::timeout;
  aborted_at = Clock::now();
  abort();
  const bool returned = result.wait_for(20s) == std::future_status::ready;
  sender.join();  // the send's own timeout (60 s) ends it when abort() did not
  CHECK(waited);
  CHECK(returned);
  const Outcome outcome = result.get();
  CHECK(outcome.ended_at - aborted_at < 10s);  // at once, not after send_timeout (60 s)
  return outcome;
}

}  // namespace

TEST_CASE("abort(): a high-throughput send waiting for a page fails at once, naming the reason",
          "[abort][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context receiver_context;  // its own loop, which the receiver never lets read
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.page_credits = 1;
  netio::HighThroughputReceiveSocket receiver(receiver_context, base, receive_options);
  netio::Context context;
  netio::HighThroughputSendOptions options;
  options.page_size = 256 * 1024;
  options.page_count = 4;
  options.send_timeout = 60s;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  REQUIRE(sender.wait_connected(5s));
  const std::vector<std::byte> message(200 * 1024);
  // Kernel buffers, the receiver's credit and the 4 pages fill up; nobody calls recv().
  REQUIRE(fill([&] { return sender.try_send(message); }));

  const auto outcome =
      abort_while_sending([&] { sender.send(message); }, [&] { sender.abort("the test says the receiver is gone"); });
  CHECK(outcome.code == netio::Errc::closed);
  CHECK_THAT(outcome.what, Catch::Contains("the test says the receiver is gone"));
  CHECK_THROWS_AS(sender.try_send(message), netio::Error);
  CHECK(sender.failure().has_value());
}

TEST_CASE("abort(): a low-latency send waiting for a buffer fails at once, naming the reason", "[abort][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context receiver_context;
  std::promise<void> release;
  const auto released = release.get_future().share();
  // The handler holds the receiver's loop: nothing more is read until the test ends.
  netio::LowLatencyReceiveSocket receiver(
      receiver_context, base, [released](std::span<const std::byte>, const netio::Peer&) { released.wait_for(60s); });
  netio::Context context;
  netio::LowLatencySendOptions options;
  options.buffer_count = 4;
  options.buffer_size = 256 * 1024;
  options.send_timeout = 60s;
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), options);
  REQUIRE(sender.wait_connected(5s));
  const std::vector<std::byte> message(200 * 1024);
  REQUIRE(fill([&] { return sender.try_send(message); }));

  const auto outcome =
      abort_while_sending([&] { sender.send(message); }, [&] { sender.abort("the test says the receiver is gone"); });
  release.set_value();
  CHECK(outcome.code == netio::Errc::closed);
  CHECK_THAT(outcome.what, Catch::Contains("the test says the receiver is gone"));
  CHECK_THROWS_AS(sender.try_send(message), netio::Error);
}

TEST_CASE("abort(): a multi-destination send waiting on one destination fails at once, the others go on",
          "[abort][connections][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context receiver_context;
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.page_credits = 1;
  netio::HighThroughputReceiveSocket stalled(receiver_context, base, receive_options);
  netio::Context context;
  netio::HighThroughputReceiveSocket healthy(context, base);
  netio::MultiDestinationSendOptions options;
  options.mode = netio::SendMode::high_throughput;
  options.max_connections = 2;
  options.send_timeout = 60s;
  options.failed_peer_retry = 60s;
  options.high_throughput.page_size = 256 * 1024;
  options.high_throughput.page_count = 4;
  netio::MultiDestinationSendSocket sender(context, options);
  const std::vector<std::byte> message(200 * 1024);
  sender.send(stalled.local_endpoint(), message);  // waits for the connection
  REQUIRE(fill([&] { return sender.try_send(stalled.local_endpoint(), message); }));

  const auto outcome = abort_while_sending([&] { sender.send(stalled.local_endpoint(), message); },
                                           [&] { sender.abort(stalled.local_endpoint(), "it is gone"); });
  CHECK(outcome.code == netio::Errc::closed);
  CHECK_THAT(outcome.what, Catch::Contains("it is gone"));
  // For failed_peer_retry, or until disconnect() forgets it, sends to it fail the same way.
  CHECK_THROWS_AS(sender.send(stalled.local_endpoint(), message), netio::Error);
  // The other destination is not touched.
  sender.send(healthy.local_endpoint(), message);
  sender.flush();
  CHECK(healthy.recv(10s).has_value());
  CHECK(sender.connection_stats().failed == 0);  // asked for, not counted as a failure
}
