// Admission control on listen sockets (netio/admission.hpp): hostile peers that hold
// connections (silent, half a frame, idle after the hello, idle after the introduction,
// more than allowed, more than the descriptors) are dropped or refused, and a verified
// stream from a legitimate peer running beside them loses nothing.
#include "backends/posix/wire.hpp"
#include "introduction.hpp"
#include "netio/admission.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/admission_peers.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;
using netio::test::HelloOnlyPeer;
using netio::test::named;
using netio::test::RawConnection;
using netio::test::send_stream;
using netio::test::StreamCheck;

namespace {

struct Receiver {
  Receiver(const Endpoint& base, netio::AdmissionOptions admission)
      : context(netio::test::context_options()), socket(context, base, stream.handler(), options(std::move(admission))) {}

  netio::LowLatencyReceiveOptions options(netio::AdmissionOptions admission) {
    netio::LowLatencyReceiveOptions o;
    o.admission = std::move(admission);
    o.events.on_connected = [this](const netio::Peer&) { ++connected; };
    o.events.on_disconnected = [this](const netio::Peer& peer, const netio::Error&) {
      std::lock_guard lock(mutex);
      ++disconnected;
      gone.push_back(peer.name());
    };
    return o;
  }
  bool went(const std::string& name) {
    std::lock_guard lock(mutex);
    return std::find(gone.begin(), gone.end(), name) != gone.end();
  }

  std::atomic<int> connected{0}, disconnected{0};
  std::mutex mutex;
  std::vector<std::string> gone;  // names of the peers reported disconnected
  StreamCheck stream;
  netio::Context context;
  netio::LowLatencyReceiveSocket socket;
};

// The legitimate peer: connects and streams `count` verified messages, all of which arrive.
void legitimate_stream(Receiver& receiver, const std::string& name, std::uint64_t count = 500) {
  netio::Context context(netio::test::context_options());
  netio::LowLatencySendSocket sender(context, receiver.socket.local_endpoint(), named(name));
  sender.wait_connected(20s);
  send_stream(sender, 0, count);
  REQUIRE(eventually([&] { return receiver.stream.received(name) == count; }, 20s));
  CHECK(receiver.stream.corrupt() == 0);
}

// The descriptor limit that leaves `spare` descriptors free: new descriptors take the lowest
// free numbers, and a limit caps the numbers, not the count.
rlim_t limit_leaving(int spare) {
  std::set<int> open;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    open.insert(std::stoi(entry.path().filename().string()));
  }
  int limit = 0;
  for (int free = 0; free < spare; ++limit) {
    if (open.count(limit) == 0) ++free;
  }
  return static_cast<rlim_t>(limit);
}

std::vector<std::byte> posix_request_frame() {
  const auto hello = netio::detail::encode_hello({netio::detail::SocketKind::low_latency_send, 0});
  return netio::posix::encode_request(0, hello);
}

}  // namespace

TEST_CASE("a flood of silent connections drops the oldest waiting ones, and a legitimate stream gets through",
          "[admission][integration]") {
  netio::AdmissionOptions admission;
  admission.max_pending_handshakes = 8;
  admission.handshake_timeout = 60s;  // only the cap can free them within the test
  Receiver receiver(Endpoint::parse("tcp://127.0.0.1:0"), admission);
  std::vector<std::unique_ptr<RawConnection>> silent;
  for (int i = 0; i < 40; ++i) silent.push_back(std::make_unique<RawConnection>(receiver.socket.local_endpoint().port));

  legitimate_stream(receiver, "legit");
  // The oldest 32 were dropped to keep at most 8 waiting; the newest 8 may still wait.
  for (int i = 0; i < 32; ++i) CHECK(silent[static_cast<std::size_t>(i)]->closed_by_peer(10s));
  CHECK(receiver.connected == 1);
}

TEST_CASE("a silent connection is dropped after the handshake timeout", "[admission][integration]") {
  netio::AdmissionOptions admission;
  admission.handshake_timeout = 200ms;
  Receiver receiver(Endpoint::parse("tcp://127.0.0.1:0"), admission);
  RawConnection silent(receiver.socket.local_endpoint().port);
  RawConnection half_hello(receiver.socket.local_endpoint().port);
  half_hello.send_bytes(std::span<const std::byte>(posix_request_frame()).first(10));
  CHECK(silent.closed_by_peer(10s));
  CHECK(half_hello.closed_by_peer(10s));
  legitimate_stream(receiver, "legit");
}

TEST_CASE("slowloris: half a frame, then silence, is dropped by the progress timeout", "[admission][integration]") {
  netio::AdmissionOptions admission;
  admission.progress_timeout = 300ms;
  Receiver receiver(Endpoint::parse("tcp://127.0.0.1:0"), admission);
  RawConnection slow(receiver.socket.local_endpoint().port);
  slow.send_bytes(posix_request_frame());
  const auto reply = slow.receive(64, 10s);
  REQUIRE(reply.size() >= 9);
  REQUIRE(reply[8] == std::byte{1});  // accepted
  const auto introduction = netio::detail::encode_introduction({"slowloris", std::nullopt});
  slow.send_bytes(netio::posix::encode_frame(introduction));
  REQUIRE(eventually([&] { return receiver.connected == 1; }));

  // A 1000-byte frame of which 10 bytes come, then nothing.
  auto frame = netio::posix::encode_frame(std::vector<std::byte>(1000, std::byte{7}));
  frame.resize(netio::posix::frame_header_size + 10);
  slow.send_bytes(frame);
  // A legitimate stream meanwhile: the slow peer does not hold it up.
  legitimate_stream(receiver, "legit", 300);
  CHECK(slow.closed_by_peer(10s));
  CHECK(eventually([&] { return receiver.went("slowloris"); }));
  legitimate_stream(receiver, "legit-after", 300);
}

TEST_CASE("a peer pausing between frames longer than the progress timeout is not dropped",
          "[admission][integration]") {
  // Only a frame begun and not finished counts: between frames a peer may pause at will.
  netio::AdmissionOptions admission;
  admission.progress_timeout = 200ms;
  Receiver receiver(Endpoint::parse("tcp://127.0.0.1:0"), admission);
  netio::Context context(netio::test::context_options());
  netio::LowLatencySendSocket sender(context, receiver.socket.local_endpoint(), named("steady"));
  sender.wait_connected(20s);
  for (std::uint64_t i = 0; i < 10; ++i) {
    send_stream(sender, i, 1);
    std::this_thread::sleep_for(i % 3 == 0 ? 500ms : 20ms);
  }
  REQUIRE(eventually([&] { return receiver.stream.received("steady") == 10; }));
  CHECK(receiver.disconnected == 0);
}

TEST_CASE("peers that stop after a valid hello are dropped: the oldest beyond the cap, the rest at the timeout",
          "[admission][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::AdmissionOptions admission;
  admission.max_pending_handshakes = 3;
  admission.handshake_timeout = 1500ms;
  Receiver receiver(base, admission);
  netio::Context attackers(netio::test::context_options());
  std::vector<std::unique_ptr<HelloOnlyPeer>> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(std::make_unique<HelloOnlyPeer>(attackers, receiver.socket.local_endpoint()));
    REQUIRE(eventually([&] { return idle.back()->connected(); }));
  }
  // The cap: the five oldest went at once (long before the timeout).
  CHECK(eventually([&] { return idle[4]->disconnected(); }, 1s));
  for (int i = 0; i < 5; ++i) CHECK(idle[static_cast<std::size_t>(i)]->disconnected());
  legitimate_stream(receiver, "legit");
  // The timeout: the rest follow.
  CHECK(eventually([&] {
    return std::all_of(idle.begin(), idle.end(), [](const auto& peer) { return peer->disconnected(); });
  }));
  CHECK(receiver.connected == 1);
}

TEST_CASE("the idle timeout drops introduced peers that stay silent, when enabled", "[admission][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const bool enabled = GENERATE(true, false);
  netio::AdmissionOptions admission;
  if (enabled) admission.idle_timeout = 400ms;
  Receiver receiver(base, admission);
  netio::Context context(netio::test::context_options());
  netio::LowLatencySendSocket idle(context, receiver.socket.local_endpoint(), named("idle"));
  netio::LowLatencySendSocket busy(context, receiver.socket.local_endpoint(), named("busy"));
  idle.wait_connected(20s);
  busy.wait_connected(20s);
  send_stream(idle, 0, 1);
  // The busy peer sends every 50 ms for 2 s: never idle for 400 ms.
  for (std::uint64_t i = 0; i < 40; ++i) {
    send_stream(busy, i, 1);
    std::this_thread::sleep_for(50ms);
  }
  REQUIRE(eventually([&] { return receiver.stream.received("busy") == 40; }));
  CHECK(receiver.stream.received("idle") == 1);
  CHECK(receiver.stream.corrupt() == 0);
  CHECK(receiver.disconnected == (enabled ? 1 : 0));
  // The dropped peer's socket learns it (its next send fails, or the loss was reported).
  if (enabled) {
    CHECK(eventually([&] {
      try {
        idle.send(netio::test::pattern(StreamCheck::stream_message_size, 1));
        idle.wait_sent(1s);
        return false;
      } catch (const netio::Error&) {
        return true;
      }
    }));
  }
}

TEST_CASE("beyond max_connections a new peer is rejected with a reason, and admitted once one leaves",
          "[admission][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::AdmissionOptions admission;
  admission.max_connections = 2;
  Receiver receiver(base, admission);
  netio::Context context(netio::test::context_options());
  auto first = std::make_unique<netio::LowLatencySendSocket>(context, receiver.socket.local_endpoint(), named("a"));
  netio::LowLatencySendSocket second(context, receiver.socket.local_endpoint(), named("b"));
  first->wait_connected(20s);
  second.wait_connected(20s);
  {
    netio::LowLatencySendSocket third(context, receiver.socket.local_endpoint(), named("c"));
    try {
      third.wait_connected(20s);
      FAIL("a third connection was accepted beyond max_connections = 2");
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::handshake_rejected);
      CHECK_THAT(e.what(), Catch::Contains("max_connections"));
      CHECK_THAT(e.what(), Catch::Contains(receiver.socket.local_endpoint().to_string().substr(0, 6)));
    }
  }
  first.reset();
  REQUIRE(eventually([&] { return receiver.disconnected == 1; }));
  legitimate_stream(receiver, "legit");
}

TEST_CASE("out of descriptors, the listener backs off and recovers by itself", "[admission][integration]") {
  // The receiver runs in a child process with a low descriptor limit, so that the rest of
  // the suite keeps its own. It reports through its exit status.
  int port_pipe[2];
  REQUIRE(::pipe(port_pipe) == 0);
  constexpr std::uint64_t count = 300;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(port_pipe[0]);
    int status = 1;
    try {
      netio::AdmissionOptions admission;
      admission.max_pending_handshakes = 1000;  // the descriptors run out first
      admission.accept_backoff = 50ms;
      Receiver receiver(Endpoint::parse("tcp://127.0.0.1:0"), admission);
      rlimit limit{};
      ::getrlimit(RLIMIT_NOFILE, &limit);
      limit.rlim_cur = limit_leaving(24);
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(5);
      const std::uint16_t port = receiver.socket.local_endpoint().port;
      if (::write(port_pipe[1], &port, sizeof port) != sizeof port) ::_exit(2);
      ::close(port_pipe[1]);
      const bool all = eventually([&] {
        return receiver.stream.received("legit-1") == count && receiver.stream.received("legit-2") == count;
      }, 60s);
      status = all && receiver.stream.corrupt() == 0 ? 0 : 3;
    } catch (...) {
      status = 4;
    }
    ::_exit(status);
  }
  ::close(port_pipe[1]);
  std::uint16_t port = 0;
  REQUIRE(::read(port_pipe[0], &port, sizeof port) == sizeof port);
  ::close(port_pipe[0]);
  const auto remote = Endpoint::parse(fmt::format("tcp://127.0.0.1:{}", port));

  {
    netio::Context context(netio::test::context_options());
    netio::LowLatencySendSocket first(context, remote, named("legit-1"));
    first.wait_connected(20s);
    send_stream(first, 0, count / 2);
    {
      // Attackers take every descriptor the receiver has left, introduce themselves and idle.
      std::vector<std::unique_ptr<netio::LowLatencySendSocket>> attackers;
      auto options = named("attacker");
      options.send_timeout = 1s;
      options.buffer_count = 1;
      options.buffer_size = 512;
      // One after the other, each introduced before the next comes: nothing is left waiting
      // in its handshake to drop, so the receiver runs out of descriptors and backs off.
      int refused = 0;
      for (int i = 0; i < 40; ++i) {
        attackers.push_back(std::make_unique<netio::LowLatencySendSocket>(context, remote, options));
        try {
          attackers.back()->wait_connected(200ms);
        } catch (const netio::Error&) {
          ++refused;  // waiting in the receiver's backlog (or reset) while it backs off
        }
      }
      CHECK(refused > 0);  // the receiver did run out
      // The connection it already had is not disturbed.
      send_stream(first, count / 2, count / 2);
      for (auto& attacker : attackers) attacker->close();  // asynchronous: nothing waits for them
    }  // the attackers go: descriptors free up
    netio::LowLatencySendSocket second(context, remote, named("legit-2"));
    second.wait_connected(30s);
    send_stream(second, 0, count);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}
