// SPDX-License-Identifier: MIT
// Replies are bounded by the receiver, not by what its sender declares: the declared reply
// size is clamped to AdmissionOptions::max_reply_size, queued replies count against the
// receive budget, and a peer that takes none of its replies for the reply timeout is dropped,
// logged once. On both back-ends.
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/matching_log_lines.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace netio::test;

// A receive handler that keeps the Peer of the last message, and waits for the first.
class LastPeer {
 public:
  netio::LowLatencyReceiveSocket::Handler handler() {
    return [this](std::span<const std::byte>, const netio::Peer& from) {
      std::lock_guard lock(mutex_);
      peer_ = from;
    };
  }
  netio::Peer wait() {
    REQUIRE(eventually([&] {
      std::lock_guard lock(mutex_);
      return peer_.has_value();
    }));
    std::lock_guard lock(mutex_);
    return *peer_;
  }

 private:
  std::mutex mutex_;
  std::optional<netio::Peer> peer_;
};

}  // namespace

TEST_CASE("a peer that declares huge replies and reads none holds at most the budget, and is dropped once",
          "[replies][budget]") {
  const auto base = GENERATE(loopback_endpoints());
  MatchingLogLines timeout_lines("reply timeout");
  netio::Context context;
  LastPeer last;
  std::atomic<int> disconnected{0};
  netio::LowLatencyReceiveOptions options;
  options.max_message_size = 4096;
  options.receive_credits = 2;
  options.reply_window = 1024;  // the window alone would let 64 MiB queue
  options.memory_budget = 1024 * 1024;
  options.admission.reply_timeout = 500ms;
  options.events.on_disconnected = [&](const netio::Peer&, const netio::Error&) { ++disconnected; };
  netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse(base), last.handler(), options);
  const auto& budget = receiver.memory_budget();

  netio::LowLatencySendOptions greedy;
  greedy.replies.max_size = 16 * 1024 * 1024;  // declared: 16 MiB
  greedy.replies.credits = 1;
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), greedy);
  sender.send(pattern(64, 0));
  const netio::Peer to = last.wait();

  // The declaration is clamped to the receiver's own limit.
  try {
    to.try_reply(std::vector<std::byte>(64 * 1024 + 1));
    FAIL("a reply beyond the receiver's max_reply_size was taken");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::message_too_large);
    CHECK_THAT(e.what(), Catch::Contains("max_reply_size"));
  }

  // Replies the sender never reads: the kernel's buffers take some, then they queue, counted
  // against the budget until it has no room: try_reply() says false long before the window,
  // and stays false once nothing moves (300 ms without room, below the reply timeout).
  const std::vector<std::byte> reply(64 * 1024, std::byte{1});
  int sent = 0;
  auto last_sent = std::chrono::steady_clock::now();
  while (sent < 4000 && std::chrono::steady_clock::now() - last_sent < 300ms) {
    if (to.try_reply(reply)) {
      ++sent;
      last_sent = std::chrono::steady_clock::now();
    } else {
      std::this_thread::sleep_for(1ms);
    }
  }
  CHECK(sent < 4000);
  CHECK(budget.refusals() > 0);
  CHECK(budget.peak() <= budget.limit());

  // No more replies are taken from it, and it is dropped (one log line), its share given back.
  INFO(base << ": " << sent << " replies sent, " << budget.used() << " bytes held, " << budget.refusals()
            << " refusals");
  REQUIRE(eventually([&] { return disconnected.load() == 1; }, 10s));
  CHECK_THROWS_AS(to.try_reply(reply), netio::Error);
  REQUIRE(eventually([&] { return budget.used() == 0; }));
  CHECK(timeout_lines.count() == 1);
}

TEST_CASE("a peer that reads its replies is not dropped by the reply timeout", "[replies]") {
  const auto base = GENERATE(loopback_endpoints());
  netio::Context context;
  LastPeer last;
  std::atomic<int> disconnected{0};
  netio::LowLatencyReceiveOptions options;
  options.admission.reply_timeout = 200ms;
  options.events.on_disconnected = [&](const netio::Peer&, const netio::Error&) { ++disconnected; };
  netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse(base), last.handler(), options);
  netio::LowLatencySendOptions reading;
  reading.replies.max_size = 1024;
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), reading);
  sender.send(pattern(64, 0));
  const netio::Peer to = last.wait();
  // Replies spread over several reply timeouts, each read as it comes.
  for (int i = 0; i < 8; ++i) {
    to.reply(pattern(1024, static_cast<std::uint64_t>(i)));
    auto got = sender.recv_reply(5s);
    REQUIRE(got);
    CHECK(got->size() == 1024);
    std::this_thread::sleep_for(100ms);
  }
  CHECK(disconnected.load() == 0);
  CHECK(receiver.memory_budget().used() <= receiver.memory_budget().limit());
}
