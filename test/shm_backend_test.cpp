// SPDX-License-Identifier: MIT
// What shm:// adds to the stream sockets it shares with tcp:// (the shared suites run over
// it through support/transports.hpp): abstract names that leave nothing behind, the peer
// credential check on both sides (processes of another user, run as a child process when
// the test runs as root), and peers killed mid-stream (kill -9 of a child process) whose
// connection and descriptors are reclaimed.
#include "backends/shm/unix_family.hpp"
#include "netio/backend_registry.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/shm_backend.hpp"
#include "support/child_process.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using netio::Endpoint;
using netio::test::ChildProcess;
using netio::test::eventually;
using namespace std::chrono_literals;

constexpr std::uint32_t nobody = 65534;

std::size_t descriptors_open() {
  const auto entries = std::filesystem::directory_iterator("/proc/self/fd");
  return static_cast<std::size_t>(std::distance(std::filesystem::begin(entries), std::filesystem::end(entries)));
}

// Whether an abstract Unix socket of that name is bound on the host (/proc/net/unix).
bool abstract_name_bound(const std::string& name) {
  std::ifstream sockets("/proc/net/unix");
  std::string line;
  while (std::getline(sockets, line)) {
    if (line.size() >= name.size() + 1 && line.compare(line.size() - name.size() - 1, std::string::npos, fmt::format("@{}", name)) == 0) {
      return true;
    }
  }
  return false;
}

std::string name_of(const Endpoint& endpoint) { return fmt::format("netio-shm/{}:{}", endpoint.host, endpoint.port); }

struct CountingReceiver {
  std::atomic<std::size_t> messages{0};
  std::atomic<std::size_t> connected{0};
  std::atomic<std::size_t> disconnected{0};
  netio::LowLatencyReceiveOptions options() {
    netio::LowLatencyReceiveOptions o;
    o.events.on_connected = [this](const netio::Peer&) { ++connected; };
    o.events.on_disconnected = [this](const netio::Peer&, const netio::Error&) { ++disconnected; };
    return o;
  }
  netio::LowLatencyReceiveSocket::Handler handler() {
    return [this](std::span<const std::byte>, const netio::Peer&) { ++messages; };
  }
};

}  // namespace

TEST_CASE("shm: a listener's name is abstract, there while it listens and gone with it", "[shm]") {
  netio::Context context;
  std::string name;
  {
    CountingReceiver counts;
    netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("shm://netio-test:0"), counts.handler(),
                                            counts.options());
    const auto bound = receiver.local_endpoint();
    CHECK(bound.scheme == "shm");
    CHECK(bound.host == "netio-test");
    CHECK(bound.port != 0);
    name = name_of(bound);
    CHECK(abstract_name_bound(name));
    // A second listener on the same name and port cannot bind it.
    CHECK_THROWS_AS(netio::LowLatencyReceiveSocket(context, bound, counts.handler()), netio::Error);
  }
  CHECK(eventually([&] { return !abstract_name_bound(name); }));
}

TEST_CASE("shm: a name that is not one fails to resolve, naming it", "[shm]") {
  for (const auto* text : {"shm://a*b:5", "shm://x..........................................................................:5"}) {
    try {
      netio::shm::abstract_address(Endpoint::parse(text));
      FAIL("no error for " << text);
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::resolve_failed);
      CHECK_THAT(e.what(), Catch::Contains("is not a shm:// name"));
    }
  }
  CHECK_NOTHROW(netio::shm::abstract_address(Endpoint::parse("shm://daq-node_1.readout:5")));
}

TEST_CASE("shm: peers are trusted by user, by the allow-list's users and groups, and by nothing else", "[shm]") {
  const ucred own{123, ::geteuid(), ::getegid()};
  CHECK(netio::shm::distrust(own, {}).empty());
  const ucred stranger{456, ::geteuid() + 1000, 4242};
  const auto why = netio::shm::distrust(stranger, {});
  CHECK_THAT(why, Catch::Contains(fmt::format("process 456 runs as user {}", stranger.uid)));
  CHECK(netio::shm::distrust(stranger, {{stranger.uid}, {}}).empty());
  CHECK(netio::shm::distrust(stranger, {{}, {4242}}).empty());
  CHECK_FALSE(netio::shm::distrust(stranger, {{stranger.uid + 1}, {4243}}).empty());
}

TEST_CASE("shm: a process of another user is refused by the listener, and told why", "[shm]") {
  if (::geteuid() != 0) {
    WARN("skipped: running a peer as another user needs root");
    return;
  }
  netio::Context context;
  CountingReceiver counts;
  netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("shm://netio-test:0"), counts.handler(),
                                          counts.options());
  const auto descriptors = descriptors_open();

  SECTION("by default") {
    // The child trusts root (its "shm-trust-root" scheme): the refusal is the listener's.
    auto address = receiver.local_endpoint();
    address.scheme = "shm-trust-root";
    ChildProcess child(NETIO_SHM_CHILD, {"send", address.to_string(), std::to_string(nobody)});
    const auto line = child.read_line();
    CHECK_THAT(line, Catch::StartsWith("failed:") && Catch::Contains("rejected the connection") &&
                         Catch::Contains(fmt::format("runs as user {}", nobody)));
  }
  SECTION("unless trusted: the allow-list admits it (and it trusts root)") {
    // The listener's scheme trusts nobody; the child's own "shm-trust-root" trusts root.
    netio::register_backend("shm-trust-nobody", netio::shm_backend_factory({{nobody}, {}}));
    netio::LowLatencyReceiveSocket trusting(context, Endpoint::parse("shm-trust-nobody://netio-test:0"),
                                            counts.handler(), counts.options());
    auto address = trusting.local_endpoint();
    address.scheme = "shm-trust-root";
    ChildProcess child(NETIO_SHM_CHILD, {"send", address.to_string(), std::to_string(nobody)});
    CHECK(child.read_line() == "connected");
    CHECK(eventually([&] { return counts.messages.load() > 0; }));
  }
  CHECK(counts.connected.load() <= 1);
  CHECK(eventually([&] { return descriptors_open() <= descriptors + 3; }));  // the second listener's, at most
}

TEST_CASE("shm: a listener of another user is refused by the connector", "[shm]") {
  if (::geteuid() != 0) {
    WARN("skipped: running a peer as another user needs root");
    return;
  }
  ChildProcess child(NETIO_SHM_CHILD, {"receive", "netio-test", std::to_string(nobody)});
  const auto endpoint = child.read_line();
  REQUIRE_THAT(endpoint, Catch::StartsWith("shm://netio-test:"));
  netio::Context context;
  netio::LowLatencySendSocket sender(context, Endpoint::parse(endpoint));
  try {
    (void)sender.wait_connected(5s);
    FAIL("connected to a listener of user " << nobody);
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::handshake_rejected);
    CHECK_THAT(e.what(), Catch::Contains("the listener's process") &&
                             Catch::Contains(fmt::format("runs as user {}", nobody)));
  }
}

TEST_CASE("shm: a sender killed mid-stream (kill -9) is detected and its connection reclaimed", "[shm]") {
  netio::Context context;
  CountingReceiver counts;
  netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("shm://netio-test:0"), counts.handler(),
                                          counts.options());
  const auto descriptors = descriptors_open();
  {
    ChildProcess child(NETIO_SHM_CHILD, {"send", receiver.local_endpoint().to_string()});
    REQUIRE(child.read_line() == "connected");
    REQUIRE(eventually([&] { return counts.messages.load() > 1000; }));
    CHECK(descriptors_open() > descriptors);
    child.kill();
  }
  CHECK(eventually([&] { return counts.disconnected.load() == 1; }));
  CHECK(eventually([&] { return descriptors_open() == descriptors; }));
}

TEST_CASE("shm: a receiver killed mid-stream (kill -9) fails the sender, whose descriptors are reclaimed", "[shm]") {
  ChildProcess child(NETIO_SHM_CHILD, {"receive", "netio-test"});
  const auto endpoint = child.read_line();
  REQUIRE_THAT(endpoint, Catch::StartsWith("shm://netio-test:"));
  netio::Context context;
  const auto descriptors = descriptors_open();
  {
    netio::LowLatencySendSocket sender(context, Endpoint::parse(endpoint));
    REQUIRE(sender.wait_connected(5s));
    const std::vector<std::byte> message(1024, std::byte{1});
    for (int i = 0; i < 1000; ++i) sender.send(message);
    child.kill();
    // Sends throw once the connection is known lost: the failure is what counts.
    CHECK(eventually([&] {
      try {
        if (!sender.try_send(message)) std::this_thread::sleep_for(1ms);
      } catch (const netio::Error&) {
      }
      return sender.failure().has_value();
    }));
    CHECK(sender.failure()->code() == netio::Errc::disconnected);
  }
  CHECK(eventually([&] { return descriptors_open() == descriptors; }));
}

TEST_CASE("shm: 200 connections opened and closed leave no descriptor and no name behind", "[shm]") {
  netio::Context context;
  std::string name;
  const auto descriptors = descriptors_open();
  {
    CountingReceiver counts;
    netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("shm://netio-test:0"), counts.handler(),
                                            counts.options());
    name = name_of(receiver.local_endpoint());
    const std::vector<std::byte> message(100, std::byte{2});
    for (int i = 0; i < 200; ++i) {
      netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
      REQUIRE(sender.wait_connected(5s));
      sender.send(message);
      REQUIRE(sender.wait_sent(5s));
    }
    CHECK(eventually([&] { return counts.messages.load() == 200 && counts.disconnected.load() == 200; }));
  }
  CHECK(eventually([&] { return descriptors_open() == descriptors; }));
  CHECK_FALSE(abstract_name_bound(name));
}
