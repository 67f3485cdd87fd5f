// SPDX-License-Identifier: MIT
// The connection data of the libfabric back-end's accept against the provider's limit
// (FI_OPT_CM_DATA_SIZE): an accept answering a pre-shared key's challenge carries 53 bytes;
// a provider that cannot carry them fails the listen with the sizes, never cuts them short.
#include "authentication.hpp"
#include "backends/fabric/fabric_endpoint.hpp"
#include "backends/fabric/fabric_wire.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/socket_options.hpp"
#include "support/admission_peers.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <atomic>
#include <string>

using namespace std::chrono_literals;
using netio::test::eventually;

TEST_CASE("a keyed accept's connection data is checked against the provider's limit", "[fabric][auth]") {
  using netio::fabric::require_accept_fits;
  namespace wire = netio::fabric::wire;
  const std::size_t answer = netio::detail::auth_accept_size;
  // The encoder and the check agree on the size: header, two u64, a length byte, the answer.
  const auto encoded = wire::encode_accept({4096, 8, std::vector<std::byte>(answer)});
  CHECK(encoded.size() == wire::accept_size_with(answer));
  CHECK(encoded.size() == 53u);
  CHECK(wire::accept_size_with(0) == wire::encode_accept({4096, 8, {}}).size());

  CHECK_NOTHROW(require_accept_fits("fabric listen socket fabric://10.0.0.1:5000", "provider x", answer, 53));
  CHECK_NOTHROW(require_accept_fits("fabric listen socket fabric://10.0.0.1:5000", "provider x", answer, 256));
  try {
    require_accept_fits("fabric listen socket fabric://10.0.0.1:5000", "provider verbs, fabric IB-0xfe80", answer, 48);
    FAIL("53 bytes of accept data passed a 48-byte limit");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("fabric://10.0.0.1:5000"));
    CHECK_THAT(what, Catch::Contains("needs 53 bytes"));
    CHECK_THAT(what, Catch::Contains("carries at most 48"));
    CHECK_THAT(what, Catch::Contains("provider verbs"));
    CHECK_THAT(what, Catch::Contains("FI_OPT_CM_DATA_SIZE"));
  }
}

TEST_CASE("a keyed fabric listener on the loopback providers listens and authenticates",
          "[fabric][auth][integration][sockets]") {
  if (!netio::PreSharedKey::supported()) {
    WARN("netio built without libsodium: authentication not tested");
    return;
  }
  const std::string provider = GENERATE("tcp", "sockets");
  INFO("provider " << provider);
  const auto key = netio::PreSharedKey::from_hex(std::string(64, 'd'));
  netio::test::StreamCheck stream;
  std::atomic<int> connected{0};
  netio::Context receiving(netio::test::context_options());
  netio::LowLatencyReceiveOptions options;
  options.admission.key = key;
  options.events.on_connected = [&](const netio::Peer&) { ++connected; };
  // listen() checked the provider's limit: both loopback providers carry the 53 bytes.
  netio::LowLatencyReceiveSocket receiver(
      receiving, netio::Endpoint::parse(fmt::format("fabric://127.0.0.1:0?provider={}", provider)), stream.handler(),
      options);
  netio::Context sending(netio::test::context_options());
  auto send_options = netio::test::named("keyed");
  send_options.key = key;
  netio::LowLatencySendSocket sender(sending, receiver.local_endpoint(), send_options);
  REQUIRE(sender.wait_connected(20s));
  netio::test::send_stream(sender, 0, 50);
  REQUIRE(eventually([&] { return stream.received("keyed") == 50; }));
  CHECK(stream.corrupt() == 0);
  CHECK(connected == 1);
}
