// SPDX-License-Identifier: MIT
// A rejected connection is logged once on each side, whatever the back-end: the receiver says
// whom it rejected and why, the sender's socket says it was rejected; nobody repeats it.
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/transports.hpp"

#include "address.hpp"
#include "backends/shm/unix_family.hpp"
#include "netio/internal/little_endian.hpp"
#include "rejection_log.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

using namespace std::chrono_literals;

namespace {

// What the process writes to stderr (netio's log) while it lives.
class CapturedStderr {
 public:
  CapturedStderr() : file_(std::tmpfile()), saved_(::dup(2)) {
    std::fflush(stderr);
    ::dup2(::fileno(file_), 2);
  }
  ~CapturedStderr() { restore(); }
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;
  std::string text() {
    restore();
    std::string all;
    std::rewind(file_);
    char buffer[4096];
    while (const auto n = std::fread(buffer, 1, sizeof buffer, file_)) all.append(buffer, n);
    return all;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// What netio writes to stderr at `level` while `body` runs (the level restored after).
std::string log_of(netio::LogLevel level, const std::function<void()>& body) {
  const auto saved = netio::log_level();
  netio::set_log_level(level);
  std::string log;
  {
    CapturedStderr captured;
    body();
    log = captured.text();
  }
  netio::set_log_level(saved);
  return log;
}

// A high-throughput receiver on `base` and a low-latency sender to it, which it rejects;
// `with_sender` runs while both live.
std::string log_of_rejected_sender(const netio::Endpoint& base,
                                   const std::function<void(netio::LowLatencySendSocket&)>& with_sender) {
  return log_of(netio::LogLevel::warn, [&] {
    netio::Context context;
    netio::HighThroughputReceiveSocket receiver(context, base);
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
    with_sender(sender);
  });
}

}  // namespace

TEST_CASE("a rejected connection is logged once on each side", "[faults][integration]") {
  const auto base = netio::Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const std::string log = log_of_rejected_sender(base, [](netio::LowLatencySendSocket& sender) {
    CHECK_THROWS_WITH(sender.wait_connected(10s), Catch::Contains("rejected the connection"));
  });
  INFO(log);
  // The receiver: "rejecting <peer>: the peer is a low-latency send socket, but ...".
  CHECK(count(log, "rejecting ") == 1);
  // The sender's owner was told by the exception: the log does not say it again.
  CHECK(count(log, "rejected the connection") == 0);
}

TEST_CASE("a send socket's connect failure is said once: to the caller, else in the log at close",
          "[faults][integration]") {
  const auto base = netio::Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const bool asked = GENERATE(false, true);
  const std::string log = log_of_rejected_sender(base, [asked](netio::LowLatencySendSocket& sender) {
    if (asked) {
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!sender.failure() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
      CHECK(sender.failure());
    } else {
      // Nothing on the socket tells of a failure without telling its caller: give the
      // rejection (a loopback round trip) ample time.
      std::this_thread::sleep_for(1s);
    }
  });
  INFO(log);
  CHECK(count(log, "rejected the connection") == (asked ? 0 : 1));
}

namespace {

// A raw stream connection to the listener of a tcp:// or shm:// endpoint (the POSIX listener).
int raw_connect(const netio::Endpoint& endpoint) {
  netio::detail::SocketAddress address;
  if (endpoint.scheme == "shm") {
    address = netio::shm::abstract_address(endpoint);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&address.storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(endpoint.port);
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.length = sizeof(sockaddr_in);
  }
  const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  REQUIRE(::connect(fd, address.get(), address.length) == 0);
  return fd;
}

}  // namespace

TEST_CASE("a connect request too short to read is rejected with one warning naming the peer and the reason",
          "[faults][integration]") {
  // tcp:// and shm:// (the POSIX listener); fabric:// has a listener of its own.
  const auto base = netio::Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  if (base.scheme == "fabric") return;
  const std::string log = log_of(netio::LogLevel::info, [&] {
    netio::Context context;
    netio::LowLatencyReceiveSocket receiver(context, base, [](std::span<const std::byte>, const netio::Peer&) {});
    // A frame of 4 bytes: the length (8 bytes, little-endian), then 4 bytes of request.
    std::byte frame[12]{};
    netio::detail::store_le<std::uint64_t>(frame, 4);
    const int fd = raw_connect(receiver.local_endpoint());
    REQUIRE(::send(fd, frame, sizeof frame, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof frame));
    // The listener answers (a rejection) and closes: wait for the end of the stream.
    std::byte sink[256];
    for (int i = 0; i < 500 && ::recv(fd, sink, sizeof sink, 0) > 0; ++i) {
    }
    ::close(fd);
  });
  INFO(log);
  CHECK(count(log, "netio warn: listen socket ") == 1);
  CHECK(count(log, "rejecting ") == 1);
  CHECK(count(log, "malformed connection request of 4 bytes") == 1);
}

TEST_CASE("rejections are logged at most a burst per period, and the next line counts the ones left out", "[faults]") {
  const std::string log = log_of(netio::LogLevel::warn, [] {
    netio::RejectionLog rejections(std::chrono::seconds(1), 3);
    const auto start = netio::RejectionLog::Clock::now();
    for (int i = 0; i < 10; ++i) rejections.reject("tcp://127.0.0.1:1", "127.0.0.1:2", "junk", start);
    CHECK(rejections.left_out() == 7);
    rejections.reject("tcp://127.0.0.1:1", "127.0.0.1:2", "junk", start + std::chrono::seconds(1));
  });
  INFO(log);
  CHECK(count(log, "listen socket tcp://127.0.0.1:1: rejecting 127.0.0.1:2: junk") == 4);
  CHECK(count(log, "(7 more rejection(s) not logged before this one)") == 1);
}

namespace {

// The descriptor of this process's Unix socket connected to the shm:// listener of `listener`
// (the sender's end of the connection), or -1.
int shm_connector_socket(const netio::Endpoint& listener) {
  const auto expected = netio::shm::abstract_address(listener);
  for (int fd = 3; fd < 4096; ++fd) {
    netio::detail::SocketAddress peer;
    peer.length = sizeof peer.storage;
    if (::getpeername(fd, peer.get(), &peer.length) != 0 || peer.family() != AF_UNIX) continue;
    if (peer.length == expected.length && std::memcmp(&peer.storage, &expected.storage, peer.length) == 0) return fd;
  }
  return -1;
}

}  // namespace

TEST_CASE("shm: a peer passing two descriptors in one message is dropped, the reason naming it once", "[faults][shm]") {
  const std::string log = log_of(netio::LogLevel::warn, [] {
    netio::Context context;
    netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse("shm://netio-test:0"));
    netio::HighThroughputSendSocket sender(context, receiver.local_endpoint());
    REQUIRE(sender.wait_connected(5s));
    const int fd = shm_connector_socket(receiver.local_endpoint());
    REQUIRE(fd >= 0);
    // Nothing sent yet, so no send area passed: one wake-up byte carrying two descriptors.
    const int passed[2] = {::dup(0), ::dup(0)};
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof passed)]{};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof passed);
    std::memcpy(CMSG_DATA(header), passed, sizeof passed);
    REQUIRE(::sendmsg(fd, &message, MSG_NOSIGNAL) == 1);
    ::close(passed[0]);
    ::close(passed[1]);
    // The receiver drops the connection: the sender sees it go.
    CHECK(netio::test::eventually([&] { return sender.failure().has_value(); }));
  });
  INFO(log);
  const auto at = log.find("shm connection from ");
  REQUIRE(at != std::string::npos);
  const std::string line = log.substr(at, log.find('\n', at) - at);
  CHECK_THAT(line, Catch::Contains("the peer passed 2 descriptors in one message (a send area is one)"));
  // The peer named once: "shm connection from PEER to LOCAL: ...".
  const std::string peer = line.substr(20, line.find(" to ") - 20);
  CHECK(count(line, peer) == 1);
}

TEST_CASE("connections dropped for what their peers sent are logged at most a burst per period, process-wide",
          "[faults]") {
  // A peer that floods and reconnects at once is dropped thousands of times a second: one
  // line each filled the log (tools/bench/shm_flood.sh: 4,500-6,800 lines a second).
  const std::string log = log_of(netio::LogLevel::warn, [] {
    netio::DroppedConnectionLog drops(std::chrono::seconds(1), 3);
    const auto start = netio::DroppedConnectionLog::Clock::now();
    for (int i = 0; i < 10; ++i) drops.dropped("shm connection a -> b: a wake-up flood", start);
    drops.dropped("shm connection a -> b: a wake-up flood", start + std::chrono::seconds(1));
  });
  INFO(log);
  CHECK(count(log, "receive socket: shm connection a -> b: a wake-up flood; disconnecting") == 4);
  CHECK(count(log, "(7 more connection(s) dropped and not logged before this one)") == 1);
}
