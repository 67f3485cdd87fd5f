// SPDX-License-Identifier: MIT
// Hostile shm:// senders at the wire level (support/raw_shm_peer.hpp) that hold a receiver
// by what only shm:// has (issue 49): wake-up bytes without end, and a send area whose pages
// the receiver is made to map one after another. Each runs beside a verified stream from a
// legitimate sender, which must lose nothing.
#include "backends/shm/area_residency.hpp"
#include "backends/shm/send_area.hpp"
#include "introduction.hpp"
#include "netio/context.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/admission_peers.hpp"
#include "support/child_process.hpp"
#include "support/matching_log_lines.hpp"
#include "support/raw_shm_peer.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

namespace {
namespace hostile_shm {

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;
using netio::test::StreamCheck;

// Streams `count` verified messages from a sender of its own on a thread, while the test
// plays the hostile peer.
class LegitimateStream {
 public:
  LegitimateStream(const Endpoint& remote, std::uint64_t count)
      : thread_([this, remote, count] {
          netio::Context context(netio::test::context_options());
          netio::LowLatencySendSocket sender(context, remote, netio::test::named("legit"));
          if (!sender.wait_connected(20s)) return;
          for (std::uint64_t i = 0; i < count; ++i)
            sender.send(netio::test::pattern(StreamCheck::stream_message_size, i));
          sent_ = sender.wait_sent(30s);
        }) {}
  ~LegitimateStream() { thread_.join(); }
  bool sent() const { return sent_; }

 private:
  std::atomic<bool> sent_{false};
  std::thread thread_;
};

// Resident bytes of the send areas mapped in this process (/proc/self/smaps): the hostile
// peer's own mapping is never touched, so this is what the receiver's reads mapped in.
std::size_t send_areas_resident() {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_area = false;
  std::size_t kib = 0;
  while (std::getline(smaps, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') != std::string::npos &&
        line.find(' ') > line.find('-')) {
      in_area = line.find("memfd:netio-send-area") != std::string::npos;
    } else if (in_area && line.rfind("Rss:", 0) == 0) {
      kib += std::stoull(line.substr(4));
    }
  }
  return kib * 1024;
}

}  // namespace hostile_shm
}  // namespace

using namespace hostile_shm;

TEST_CASE("shm: a peer flooding wake-up bytes is disconnected, logged once, and a stream beside it completes",
          "[shm][admission]") {
  netio::test::MatchingLogLines flood_lines("wake-up flood");
  StreamCheck stream;
  netio::Context receiving(netio::test::context_options());
  netio::LowLatencyReceiveSocket receiver(receiving, Endpoint::parse("shm://netio-test:0"), stream.handler());
  constexpr std::uint64_t count = 20'000;
  std::optional<LegitimateStream> legitimate(std::in_place, receiver.local_endpoint(), count);
  // Connected before the flood: the flooder is this process too, which its drop holds off.
  REQUIRE(eventually([&] { return stream.received("legit") > 0; }, 20s));
  netio::test::RawShmPeer flooder(receiver.local_endpoint());
  // Wake-up bytes as fast as the socket takes them: the receiver drops the peer.
  CHECK(flooder.flood(10s));
  legitimate.reset();  // joins
  CHECK(eventually([&] { return stream.received("legit") == count; }, 30s));
  CHECK(stream.corrupt() == 0);
  CHECK(flood_lines.count() == 1);
}

TEST_CASE("shm: a process dropped for a wake-up flood is held off, answered when the hold ends, others connect",
          "[shm][admission]") {
  // A flooder that reconnects at once kept an idle receiver 70-81 % busy setting up and
  // tearing down its connections. Now the receiver refuses that process for
  // misbehaviour_cooldown, before any segment is made, and answers the refusal only when the
  // hold ends: the reconnect loop waits. Another process connects meanwhile.
  StreamCheck stream;
  netio::LowLatencyReceiveOptions options;
  options.admission.misbehaviour_cooldown = 1500ms;
  netio::Context receiving(netio::test::context_options());
  netio::LowLatencyReceiveSocket receiver(receiving, Endpoint::parse("shm://netio-test:0"), stream.handler(), options);
  {
    netio::test::RawShmPeer flooder(receiver.local_endpoint());
    REQUIRE(flooder.flood(10s));
  }
  netio::test::MatchingLogLines refusals("misbehaviour_cooldown");
  netio::Context sending(netio::test::context_options());
  const auto asked = std::chrono::steady_clock::now();
  {
    // The same process (this test's pid) again: refused, the answer held.
    netio::LowLatencySendSocket again(sending, receiver.local_endpoint(), netio::test::named("again"));
    // Another process meanwhile: admitted at once.
    netio::test::ChildProcess child(NETIO_SHM_CHILD, {"send", receiver.local_endpoint().to_string()});
    CHECK(child.read_line() == "connected");
    CHECK(std::chrono::steady_clock::now() - asked < 1200ms);
    try {
      (void)again.wait_connected(10s);
      FAIL("connected while held off");
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::handshake_rejected);
      CHECK_THAT(e.what(), Catch::Contains("disconnected for misbehaving") && Catch::Contains("wake-up flood") &&
                               Catch::Contains("misbehaviour_cooldown"));
    }
    // Held until the hold ended, not answered at once (the hold began at the drop, before `asked`).
    CHECK(std::chrono::steady_clock::now() - asked >= 1000ms);
    CHECK(refusals.count() == 1);
  }
  // The hold over, the process is admitted again.
  std::this_thread::sleep_for(600ms);
  netio::LowLatencySendSocket later(sending, receiver.local_endpoint(), netio::test::named("later"));
  CHECK(later.wait_connected(10s));
}

TEST_CASE("shm: a peer referencing page after page of a large send area is charged what the receiver maps in",
          "[shm][admission][budget]") {
  // A peer passes a 1 GiB send area and references 128 of its 1 MiB pages one after another;
  // the receiver reads every page it is lent. What stays mapped in is bounded (twice the
  // receiver's buffers besides what is lent) and charged to its budget: within a roomy
  // budget the peer goes on, logged once; within a tight one it is disconnected like any
  // holder that does not fit. A legitimate stream beside it loses nothing either way.
  constexpr std::size_t MiB = std::size_t{1} << 20;
  const bool tight = GENERATE(false, true);
  INFO((tight ? "a tight budget" : "a roomy budget"));
  netio::test::MatchingLogLines release_lines("has had more of its pages read");
  StreamCheck stream;
  std::atomic<std::size_t> hostile_messages{0};
  std::atomic<bool> hostile_gone{false};
  std::atomic<std::size_t> read_sum{0};
  netio::LowLatencyReceiveOptions options;
  options.max_message_size = MiB;
  options.receive_credits = 4;                         // the window: 2 x 4 x 1 MiB
  options.memory_budget = tight ? 6 * MiB : 64 * MiB;  // tight: the window does not fit
  options.events.on_disconnected = [&](const netio::Peer& peer, const netio::Error&) {
    if (peer.name() == "hostile") hostile_gone = true;
  };
  auto check = stream.handler();
  netio::Context receiving(netio::test::context_options());
  netio::LowLatencyReceiveSocket receiver(
      receiving, Endpoint::parse("shm://netio-test:0"),
      [&](std::span<const std::byte> message, const netio::Peer& peer) {
        if (peer.name() != "hostile") return check(message, peer);
        std::size_t sum = 0;
        for (std::size_t at = 0; at < message.size(); at += 4096) sum += static_cast<std::size_t>(message[at]);
        read_sum += sum;  // every page read
        ++hostile_messages;
      },
      options);
  const auto resident_before = send_areas_resident();
  constexpr std::uint64_t count = 2'000;
  std::optional<LegitimateStream> legitimate(std::in_place, receiver.local_endpoint(), count);

  netio::test::RawShmPeer hostile(receiver.local_endpoint());
  REQUIRE(hostile.push(netio::detail::encode_introduction({"hostile", std::nullopt})));
  const auto area = netio::shm::SendArea::create(std::size_t{1} << 30);
  hostile.pass(area->fd());
  constexpr std::size_t pages = 128;
  std::size_t pushed = 0;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (pushed < pages && !hostile_gone && std::chrono::steady_clock::now() < deadline) {
    std::array<std::byte, netio::shm::reference_payload_size> payload{};  // the returned flag 0
    const netio::shm::AreaReference reference{pushed * MiB, MiB};
    std::memcpy(payload.data(), &reference, sizeof reference);
    if (hostile.push(payload, netio::shm::EntryKind::area_reference))
      ++pushed;
    else
      std::this_thread::sleep_for(1ms);  // the ring is full: the receiver frees as it reads
  }
  if (tight) {
    // Charged what it maps in, it does not fit: disconnected, as any holder that does not.
    CHECK(eventually([&] { return hostile_gone.load(); }, 20s));
  } else {
    REQUIRE(pushed == pages);
    CHECK(eventually([&] { return hostile_messages.load() == pages; }, 20s));
    CHECK(release_lines.count() == 1);
    CHECK_FALSE(hostile_gone);
  }
  // The receiver's mapping of the area holds at most the window and what is lent (and a
  // block of rounding per entry), not the 128 MiB read.
  const auto resident = send_areas_resident() - std::min(resident_before, send_areas_resident());
  INFO("resident " << resident / 1024 << " KiB");
  CHECK(resident <= 2 * 4 * MiB + 4 * MiB + 4 * netio::shm::AreaResidency::block_size);
  CHECK(receiver.memory_budget().peak() <= receiver.memory_budget().limit());
  legitimate.reset();  // joins
  CHECK(eventually([&] { return stream.received("legit") == count; }, 30s));
  CHECK(stream.corrupt() == 0);
}
