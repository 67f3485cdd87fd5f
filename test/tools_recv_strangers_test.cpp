// SPDX-License-Identifier: MIT
// netio_recv trusts no stray peer: a connection that never began a run ends nothing (its
// control messages are ignored and counted), and a stream that began and did not end
// properly is reported as such, never as complete. On both back-ends and both modes.
#include "common/bench_message.hpp"
#include "common/deadline.hpp"
#include "common/run_tracker.hpp"
#include "throughput/bench_receiver.hpp"
#include "throughput/bench_sender.hpp"

#include "netio/context.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <memory>
#include <string>

namespace {

using namespace netio::test;
using netio::tools::BenchReceiverReport;
using netio::tools::ReceiveEnd;
using netio::tools::SocketMode;

// A receiver run on a thread of its own; the endpoint it listens on once it does.
struct ReceiverRun {
  explicit ReceiverRun(netio::Context& context, const std::string& base, SocketMode mode)
      : deadline(std::chrono::seconds(30)) {
    options.local = netio::Endpoint::parse(base);
    options.mode = mode;
    options.verify = true;
    options.interval = std::chrono::nanoseconds::zero();
    callbacks.on_listening = [this](const netio::Endpoint& bound) { listening.set_value(bound); };
    report = std::async(std::launch::async, [this, &context] {
      return netio::tools::run_bench_receiver(context, options, deadline, callbacks);
    });
    local = listening.get_future().get();
  }
  netio::tools::BenchReceiverOptions options;
  netio::tools::BenchReceiverCallbacks callbacks;
  netio::tools::Deadline deadline;
  std::promise<netio::Endpoint> listening;
  netio::Endpoint local;
  std::future<BenchReceiverReport> report;
};

template <typename Frame>
void send_frame(netio::LowLatencySendSocket& socket, const Frame& frame) {
  socket.send(std::span<const std::byte>(frame.data(), frame.size()));
}

// A connection of the receiver's kind that sends `frames` and nothing else, then stays.
class Stranger {
 public:
  Stranger(netio::Context& context, const netio::Endpoint& receiver, SocketMode mode) {
    if (mode == SocketMode::low_latency) {
      netio::LowLatencySendOptions options;
      options.identity.name = "stranger";
      ll_ = std::make_unique<netio::LowLatencySendSocket>(context, receiver, options);
    } else {
      netio::HighThroughputSendOptions options;
      options.identity.name = "stranger";
      options.page_size = 64 * 1024;
      ht_ = std::make_unique<netio::HighThroughputSendSocket>(context, receiver, options);
    }
  }
  template <typename Frame>
  void send(const Frame& frame) {
    const std::span<const std::byte> bytes(frame.data(), frame.size());
    if (ll_)
      ll_->send(bytes);
    else
      ht_->send(bytes);
  }
  bool wait_sent() { return ll_ ? ll_->wait_sent(10s) : ht_->flush_and_wait(10s); }

 private:
  std::unique_ptr<netio::LowLatencySendSocket> ll_;
  std::unique_ptr<netio::HighThroughputSendSocket> ht_;
};

}  // namespace

TEST_CASE("run tracker: control messages before any run are ignored and counted", "[tools][protocol][recv]") {
  netio::tools::RunTracker tracker(true);
  const auto end_of_stream = netio::tools::encode_end_of_stream(0);
  const auto run_end = netio::tools::encode_run_end({3, 64}, 10);
  tracker.on_message(end_of_stream);
  tracker.on_message(run_end);
  CHECK_FALSE(tracker.end_of_stream());
  CHECK_FALSE(tracker.began());
  CHECK(tracker.ignored_controls() == 2);
  CHECK(tracker.anomalies().empty());
  // A run that begins afterwards counts as usual, and its end of stream does end it.
  tracker.on_message(netio::tools::encode_run_begin({0, 64}, 0));
  tracker.on_message(netio::tools::encode_run_end({0, 64}, 0));
  tracker.on_message(end_of_stream);
  CHECK(tracker.end_of_stream());
  CHECK(tracker.ignored_controls() == 2);
  const auto results = tracker.finish();
  REQUIRE(results.size() == 1);
  CHECK(results[0].complete);
}

TEST_CASE("netio_recv: a stranger's end of stream ends nothing, the real sender's stream is received whole",
          "[tools][recv]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(SocketMode::high_throughput, SocketMode::low_latency);
  netio::Context context;
  ReceiverRun receiver(context, base, mode);

  Stranger stranger(context, receiver.local, mode);
  stranger.send(netio::tools::encode_end_of_stream(0));
  stranger.send(netio::tools::encode_run_end({0, 64}, 0));
  REQUIRE(stranger.wait_sent());
  // Before the fix the receiver ended here, reporting no stream at all.
  CHECK(receiver.report.wait_for(300ms) == std::future_status::timeout);

  netio::tools::BenchSenderOptions sender;
  sender.remote = receiver.local;
  sender.mode = mode;
  sender.sizes = {64};
  sender.messages_per_size = 2000;
  sender.page_size = 64 * 1024;
  const netio::tools::Deadline sender_deadline(std::chrono::seconds(30));
  const auto sent = netio::tools::run_bench_sender(context, sender, sender_deadline, {});
  REQUIRE_FALSE(sent.error);

  REQUIRE(receiver.report.wait_for(30s) == std::future_status::ready);
  const BenchReceiverReport report = receiver.report.get();
  CHECK(report.end == ReceiveEnd::end_of_stream);
  CHECK(report.stranger_controls == 2);
  CHECK(report.truncated_streams.empty());
  REQUIRE(report.per_stream.size() == 1);
  CHECK(report.per_stream[0].ended);
  REQUIRE(report.results.size() == 1);
  CHECK(report.results[0].complete);
  CHECK(report.results[0].messages == 2000);
  REQUIRE(report.results[0].verification);
  CHECK(report.results[0].verification->clean());
}

TEST_CASE("netio_recv: a stream ended inside a run is reported truncated, not complete", "[tools][recv]") {
  const auto base = GENERATE(loopback_endpoints());
  netio::Context context;
  ReceiverRun receiver(context, base, SocketMode::low_latency);
  netio::LowLatencySendSocket sender(context, receiver.local, netio::LowLatencySendOptions{});
  const netio::tools::RunKey key{0, 64};
  send_frame(sender, netio::tools::encode_run_begin(key, 10));
  netio::tools::DataMessageBuilder builder(key);
  for (std::uint64_t i = 0; i < 5; ++i) sender.send(builder.stamp(i));
  send_frame(sender, netio::tools::encode_end_of_stream(1));  // no RUN_END: cut inside the run
  REQUIRE(sender.wait_sent(10s));

  REQUIRE(receiver.report.wait_for(30s) == std::future_status::ready);
  const BenchReceiverReport report = receiver.report.get();
  CHECK(report.end == ReceiveEnd::end_of_stream);
  REQUIRE(report.truncated_streams.size() == 1);
  REQUIRE(report.results.size() == 1);
  CHECK_FALSE(report.results[0].complete);
}
