// SPDX-License-Identifier: MIT
// Who may connect: allow-lists of peer networks and pre-shared-key authentication
// (netio/socket_options.hpp, netio/socket_options.hpp), over both back-ends; and the parsers of
// their user-given strings (CIDR lists, key files).
#include "authentication.hpp"
#include "handshake.hpp"
#include "introduction.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/internal/little_endian.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/socket_options.hpp"
#include "support/admission_peers.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::PeerNetwork;
using netio::PreSharedKey;
using netio::test::eventually;
using netio::test::named;
using netio::test::send_stream;
using netio::test::StreamCheck;

namespace {

void rejected_with(const std::function<void()>& call, const std::string& why) {
  try {
    call();
    FAIL("accepted bad input; expected an error containing: " << why);
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    CHECK_THAT(e.what(), Catch::Contains(why));
  }
}

PreSharedKey key_of(char digit) { return PreSharedKey::from_hex(std::string(64, digit)); }

// A file in the build's temporary directory, removed at the end of the test.
struct TempFile {
  explicit TempFile(const std::string& content, mode_t mode = 0600)
      : path(fmt::format("/tmp/netio_auth_test_{}_{}", ::getpid(), counter()++)) {
    std::ofstream(path) << content;
    ::chmod(path.c_str(), mode);
  }
  ~TempFile() { std::remove(path.c_str()); }
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string path;
};

struct Receiver {
  Receiver(const Endpoint& base, netio::AdmissionOptions admission)
      : context(netio::test::context_options()),
        socket(context, base, stream.handler(), options(std::move(admission))) {}

  netio::LowLatencyReceiveOptions options(netio::AdmissionOptions admission) {
    netio::LowLatencyReceiveOptions o;
    o.admission = std::move(admission);
    o.events.on_connected = [this](const netio::Peer&) { ++connected; };
    return o;
  }

  std::atomic<int> connected{0};
  StreamCheck stream;
  netio::Context context;
  netio::LowLatencyReceiveSocket socket;
};

// Connects with `options`; returns the error wait_connected() threw, or "" when connected
// (and then streams 100 verified messages, which must all arrive).
std::string try_stream(Receiver& receiver, netio::LowLatencySendOptions options) {
  netio::Context context(netio::test::context_options());
  const auto name = options.identity.name;
  netio::LowLatencySendSocket sender(context, receiver.socket.local_endpoint(), std::move(options));
  try {
    if (!sender.wait_connected(20s)) FAIL("timed out");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::handshake_rejected);
    return e.what();
  }
  send_stream(sender, 0, 100);
  REQUIRE(eventually([&] { return receiver.stream.received(name) == 100; }));
  CHECK(receiver.stream.corrupt() == 0);
  return "";
}

}  // namespace

TEST_CASE("networks in CIDR notation parse and match", "[admission][auth]") {
  CHECK(PeerNetwork::parse("127.0.0.0/8").contains("127.1.2.3"));
  CHECK_FALSE(PeerNetwork::parse("127.0.0.0/8").contains("128.0.0.1"));
  CHECK(PeerNetwork::parse("10.1.2.3").contains("10.1.2.3"));
  CHECK_FALSE(PeerNetwork::parse("10.1.2.3").contains("10.1.2.4"));
  CHECK(PeerNetwork::parse("0.0.0.0/0").contains("192.168.1.1"));
  CHECK(PeerNetwork::parse("192.168.1.77/26").contains("192.168.1.64"));
  CHECK_FALSE(PeerNetwork::parse("192.168.1.77/26").contains("192.168.1.128"));
  CHECK(PeerNetwork::parse("192.168.1.77/26").to_string() == "192.168.1.64/26");
  CHECK(PeerNetwork::parse("::1").contains("::1"));
  CHECK(PeerNetwork::parse("[::1]/128").contains("::1"));
  CHECK(PeerNetwork::parse("fd00::/8").contains("fd12:3456::1"));
  CHECK_FALSE(PeerNetwork::parse("fd00::/8").contains("fe80::1"));
  CHECK_FALSE(PeerNetwork::parse("::/0").contains("127.0.0.1"));          // families do not mix...
  CHECK(PeerNetwork::parse("127.0.0.0/8").contains("::ffff:127.0.0.1"));  // ...but mapped IPv4 is IPv4
  CHECK_FALSE(PeerNetwork::parse("127.0.0.0/8").contains("localhost"));   // names never match
  const auto list = netio::parse_peer_networks("127.0.0.0/8, ::1,10.0.0.0/8");
  REQUIRE(list.size() == 3);
  CHECK(list[1].to_string() == "::1/128");
}

TEST_CASE("a bad network is refused with a clear error", "[admission][auth]") {
  rejected_with([] { PeerNetwork::parse(""); }, "not a numeric IPv4 or IPv6 address");
  rejected_with([] { PeerNetwork::parse("localhost/8"); }, "'localhost' is not a numeric");
  rejected_with([] { PeerNetwork::parse("10.0.0.0/33"); }, "prefix length 33 exceeds 32");
  rejected_with([] { PeerNetwork::parse("::/129"); }, "prefix length 129 exceeds 128");
  rejected_with([] { PeerNetwork::parse("10.0.0.0/"); }, "prefix length '' is not a number");
  rejected_with([] { PeerNetwork::parse("10.0.0.0/8x"); }, "prefix length '8x' is not a number");
  rejected_with([] { PeerNetwork::parse("10.0.0/8"); }, "'10.0.0' is not a numeric");
  rejected_with([] { PeerNetwork::parse("1.2.3.4.5"); }, "not a numeric");
  rejected_with([] { netio::parse_peer_networks("10.0.0.0/8,,::1"); }, "an empty entry");
  rejected_with([] { netio::parse_peer_networks(""); }, "an empty entry");
}

TEST_CASE("key files: 64 hexadecimal digits, private to their owner", "[auth]") {
  const std::string hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
  const TempFile good(hex + "\n");
  const auto key = PreSharedKey::from_file(good.path);
  CHECK(key.bytes()[1] == std::byte{0x11});
  CHECK(key.bytes()[31] == std::byte{0xff});

  rejected_with([] { PreSharedKey::from_file("/nonexistent/netio.key"); }, "key file /nonexistent/netio.key");
  const TempFile shared(hex, 0644);
  rejected_with([&] { PreSharedKey::from_file(shared.path); }, "readable or writable by group or others");
  const TempFile short_key(hex.substr(0, 63));
  rejected_with([&] { PreSharedKey::from_file(short_key.path); }, "this one has 63 characters");
  // Built in place: GCC 12 at -O1 (the TSan build) warns about operator+ on a temporary here
  // (-Warray-bounds, a false positive once inlining changes).
  std::string not_hex_content(63, 'a');
  not_hex_content.push_back('g');
  const TempFile not_hex(not_hex_content);
  rejected_with([&] { PreSharedKey::from_file(not_hex.path); }, "character 64 is not a hexadecimal digit");
  const TempFile empty("");
  rejected_with([&] { PreSharedKey::from_file(empty.path); }, "this one has 0 characters");
  const TempFile long_key(std::string(1000, 'a'));
  rejected_with([&] { PreSharedKey::from_file(long_key.path); }, "too long for a key");
  rejected_with([] { PreSharedKey::from_file("/tmp"); }, "not a regular file");
}

TEST_CASE("the allow-list admits peers from its networks and refuses others with a reason",
          "[admission][auth][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  if (base.scheme == "shm") {  // no IP address to allow: every shm:// peer is refused
    netio::AdmissionOptions admission;
    admission.allow = netio::parse_peer_networks("10.0.0.0/8,127.0.0.0/8");
    Receiver receiver(base, admission);
    CHECK_THAT(try_stream(receiver, named("local")),
               Catch::Contains(
                   fmt::format("{} is not in the networks this listener allows", netio::test::own_peer_host(base))));
    CHECK(receiver.connected == 0);
    return;
  }
  SECTION("127.0.0.1 in the list") {
    netio::AdmissionOptions admission;
    admission.allow = netio::parse_peer_networks("10.0.0.0/8,127.0.0.0/8");
    Receiver receiver(base, admission);
    CHECK(try_stream(receiver, named("local")).empty());
  }
  SECTION("127.0.0.1 not in the list") {
    netio::AdmissionOptions admission;
    admission.allow = netio::parse_peer_networks("10.0.0.0/8");
    Receiver receiver(base, admission);
    const auto error = try_stream(receiver, named("stranger"));
    CHECK_THAT(error, Catch::Contains("127.0.0.1 is not in the networks this listener allows (10.0.0.0/8 allowed)"));
    CHECK_THAT(error, Catch::Contains(std::to_string(receiver.socket.local_endpoint().port)));
    CHECK(receiver.connected == 0);
  }
}

TEST_CASE("the allow-list over IPv6 loopback", "[admission][auth][integration]") {
  netio::AdmissionOptions admission;
  admission.allow = netio::parse_peer_networks("::1/128");
  std::unique_ptr<Receiver> receiver;
  try {
    receiver = std::make_unique<Receiver>(Endpoint::parse("tcp://[::1]:0"), admission);
  } catch (const netio::Error& e) {
    WARN("no IPv6 loopback here: " << e.what());
    return;
  }
  CHECK(try_stream(*receiver, named("local6")).empty());
  admission.allow = netio::parse_peer_networks("fd00::/8,127.0.0.0/8");
  Receiver refusing(Endpoint::parse("tcp://[::1]:0"), admission);
  CHECK_THAT(try_stream(refusing, named("stranger6")), Catch::Contains("::1 is not in the networks"));
}

TEST_CASE("pre-shared key: the right key connects, a wrong key or none on one side is refused with a reason",
          "[auth][integration]") {
  if (!PreSharedKey::supported()) {
    WARN("netio built without libsodium: authentication not tested");
    return;
  }
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::AdmissionOptions admission;
  admission.key = key_of('a');
  Receiver receiver(base, admission);

  auto with_key = [](const std::string& name, std::optional<PreSharedKey> key) {
    auto options = named(name);
    options.key = std::move(key);
    return options;
  };
  CHECK(try_stream(receiver, with_key("right", key_of('a'))).empty());
  CHECK(receiver.connected == 1);

  const auto wrong = try_stream(receiver, with_key("wrong", key_of('b')));
  CHECK_THAT(wrong, Catch::Contains("could not prove that it holds the pre-shared key"));
  CHECK_THAT(wrong, Catch::Contains(std::to_string(receiver.socket.local_endpoint().port)));

  const auto none = try_stream(receiver, with_key("none", std::nullopt));
  CHECK_THAT(none, Catch::Contains("requires authentication with a pre-shared key, and the sender brought none"));

  Receiver keyless(base, {});
  const auto unexpected = try_stream(keyless, with_key("unexpected", key_of('a')));
  CHECK_THAT(unexpected, Catch::Contains("but this listener has none"));

  CHECK(eventually([&] { return receiver.connected == 1; }));  // only the right key got in
  CHECK(receiver.stream.received("wrong") == 0);
  CHECK(receiver.stream.received("none") == 0);
}

TEST_CASE("pre-shared key: an answer replayed from another connection is refused", "[auth][integration]") {
  if (!PreSharedKey::supported()) {
    WARN("netio built without libsodium: authentication not tested");
    return;
  }
  using namespace netio::detail;
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const auto key = key_of('c');
  netio::AdmissionOptions admission;
  admission.key = key;
  Receiver receiver(base, admission);
  netio::Context attacker(netio::test::context_options());

  // A recorded exchange: the sender's nonce, and the introduction with its proof.
  Hello hello{SocketKind::low_latency_send, 0};
  hello.challenge = random_nonce();
  std::vector<std::byte> recorded;
  {
    netio::test::HelloOnlyPeer legit(attacker, receiver.socket.local_endpoint(), encode_hello(hello));
    REQUIRE(eventually([&] { return legit.connected(); }));
    const auto accept = legit.accept_data();
    REQUIRE(accept.size() == auth_accept_size);
    AuthNonce listener_nonce;
    std::copy_n(accept.begin(), auth_nonce_size, listener_nonce.begin());
    const auto proof = auth_proof(key, AuthRole::sender, *hello.challenge, listener_nonce);
    recorded.resize(auth_block_size);
    store_le<std::uint32_t>(recorded.data(), auth_block_magic);
    std::copy(proof.begin(), proof.end(), recorded.begin() + 4);
    const auto introduction = encode_introduction({"recorded", std::nullopt});
    recorded.insert(recorded.end(), introduction.begin(), introduction.end());
    legit.send(recorded);
    REQUIRE(eventually([&] { return receiver.connected == 1; }));  // the genuine exchange works
  }

  // The replay: the same hello (same nonce) and the same answer, on a new connection. The
  // listener picks a new nonce of its own, so the old answer does not fit.
  netio::test::HelloOnlyPeer replay(attacker, receiver.socket.local_endpoint(), encode_hello(hello));
  REQUIRE(eventually([&] { return replay.connected() || replay.failed(); }));
  REQUIRE(replay.connected());  // the hello itself is well-formed
  replay.send(recorded);
  CHECK(eventually([&] { return replay.disconnected(); }));
  CHECK(receiver.connected == 1);
  // The genuine one left, the replay was dropped (each counted once reported).
  CHECK(eventually([&] { return receiver.socket.stats().disconnects == 2; }));
}
