// SPDX-License-Identifier: MIT
// The connection limit (AdmissionOptions::max_connections) charged like the memory budget
// (issue 49): its default leaves descriptors under the process's limit, and a newcomer at
// the limit evicts the introduced connection idle longest that has sent no data, on every
// back-end; a peer that proved the pre-shared key is not evicted. Running out of the
// descriptors themselves is tested in admission_test.cpp (a child process).
#include "introduction.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/socket_options.hpp"
#include "support/admission_peers.hpp"
#include "support/sanitizers.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace limit_test {

using namespace std::chrono_literals;
using netio::test::eventually;
using netio::test::HelloOnlyPeer;

// Sets the soft descriptor limit for the scope of the object.
class SoftDescriptorLimit {
 public:
  explicit SoftDescriptorLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = soft;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  }
  ~SoftDescriptorLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  SoftDescriptorLimit(const SoftDescriptorLimit&) = delete;
  SoftDescriptorLimit& operator=(const SoftDescriptorLimit&) = delete;

 private:
  rlimit saved_{};
};

struct CountingReceiver {
  netio::LowLatencyReceiveOptions options(netio::AdmissionOptions admission) {
    netio::LowLatencyReceiveOptions o;
    o.admission = std::move(admission);
    o.events.on_connected = [this](const netio::Peer&) { ++connected; };
    return o;
  }
  std::atomic<int> connected{0};
  netio::test::StreamCheck stream;
};

// A peer that connects, introduces itself as `name` (none when empty) and idles.
std::unique_ptr<HelloOnlyPeer> idle_peer(netio::Context& context, const netio::Endpoint& remote,
                                         const std::string& name) {
  auto peer = std::make_unique<HelloOnlyPeer>(context, remote);
  REQUIRE(eventually([&] { return peer->connected() || peer->failed(); }));
  REQUIRE(peer->connected());
  if (!name.empty()) peer->send(netio::detail::encode_introduction({name, std::nullopt}));
  return peer;
}

}  // namespace limit_test
}  // namespace

using namespace limit_test;

TEST_CASE("the default connection limit leaves descriptors under the process's limit", "[admission]") {
  {
    const SoftDescriptorLimit limit(256);
    CHECK(netio::default_max_connections() == 256 - netio::connection_limit_headroom);
    CHECK(netio::AdmissionOptions{}.connection_limit() == 256 - netio::connection_limit_headroom);
  }
  {
    const SoftDescriptorLimit limit(4096);
    CHECK(netio::default_max_connections() == 1024);  // an eighth of 4096 left: the ceiling holds
  }
  {
    const SoftDescriptorLimit limit(1024);
    CHECK(netio::default_max_connections() == 1024 - 1024 / 8);
  }
  netio::AdmissionOptions set;
  set.max_connections = 7;
  CHECK(set.connection_limit() == 7);
}

TEST_CASE("at max_connections a newcomer evicts the introduced connection idle longest, and streams at once",
          "[admission][integration]") {
  const auto base = netio::Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  INFO(base.to_string());
  CountingReceiver state;
  netio::AdmissionOptions admission;
  admission.max_connections = 3;
  netio::Context receiving(netio::test::context_options());
  netio::LowLatencyReceiveSocket receiver(receiving, base, state.stream.handler(), state.options(admission));
  const auto remote = receiver.local_endpoint();
  netio::Context attacking(netio::test::context_options());
  // `early` connects first but introduces itself after `late`: idle longest is `late`.
  auto early = idle_peer(attacking, remote, "");
  auto late = idle_peer(attacking, remote, "late");
  REQUIRE(eventually([&] { return state.connected == 1; }));
  std::this_thread::sleep_for(20ms);
  early->send(netio::detail::encode_introduction({"early", std::nullopt}));
  REQUIRE(eventually([&] { return state.connected == 2; }));
  auto third = idle_peer(attacking, remote, "third");
  REQUIRE(eventually([&] { return state.connected == 3; }));

  netio::Context sending(netio::test::context_options());
  netio::LowLatencySendSocket sender(sending, remote, netio::test::named("legit"));
  REQUIRE(sender.wait_connected(netio::test::sanitized ? 10s : 2s));
  netio::test::send_stream(sender, 0, 100);
  REQUIRE(eventually([&] { return state.stream.received("legit") == 100; }));
  CHECK(state.stream.corrupt() == 0);
  CHECK(eventually([&] { return late->disconnected(); }));
  CHECK_FALSE(early->disconnected());
  CHECK_FALSE(third->disconnected());
}

TEST_CASE("at max_connections a peer that proved the key is not evicted for a newcomer", "[admission][auth]") {
  if (!netio::PreSharedKey::supported()) {
    WARN("built without libsodium: no keys");
    return;
  }
  const auto key = netio::PreSharedKey::from_hex(std::string(64, '7'));
  CountingReceiver state;
  netio::AdmissionOptions admission;
  admission.max_connections = 1;
  admission.key = key;
  netio::Context receiving(netio::test::context_options());
  netio::LowLatencyReceiveSocket receiver(receiving, netio::Endpoint::parse("tcp://127.0.0.1:0"),
                                          state.stream.handler(), state.options(admission));
  netio::Context sending(netio::test::context_options());
  auto options = netio::test::named("trusted");
  options.key = key;
  netio::LowLatencySendSocket trusted(sending, receiver.local_endpoint(), options);
  REQUIRE(trusted.wait_connected(20s));
  REQUIRE(eventually([&] { return state.connected == 1; }));
  options.identity.name = "newcomer";
  netio::LowLatencySendSocket newcomer(sending, receiver.local_endpoint(), options);
  try {
    if (!newcomer.wait_connected(20s)) FAIL("timed out");
    FAIL("the newcomer was let in beyond max_connections = 1");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::handshake_rejected);
    CHECK_THAT(e.what(), Catch::Contains("max_connections"));
  }
  netio::test::send_stream(trusted, 0, 10);
  CHECK(eventually([&] { return state.stream.received("trusted") == 10; }));
}
