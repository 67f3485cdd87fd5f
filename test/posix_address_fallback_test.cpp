// SPDX-License-Identifier: MIT
// A host name can stand for several addresses (localhost for ::1 and 127.0.0.1 on most
// Debian hosts, a cluster node for its IPv6 and IPv4 addresses), and a server often listens
// on one family only. The POSIX send socket tries the addresses in turn, as a user expects
// of any TCP client; these tests hand it the addresses directly (connect_to), since which
// names resolve to what depends on the machine's /etc/hosts.
#include "address.hpp"
#include "backends/posix/posix_send_socket.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

using netio::AcceptDecision;
using netio::Endpoint;
using netio::Errc;
using netio::Error;
using netio::detail::SocketAddress;
using netio::test::eventually;

namespace {

SocketAddress ipv4(const char* host, std::uint16_t port) {
  SocketAddress address;
  auto* in = reinterpret_cast<sockaddr_in*>(&address.storage);
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  REQUIRE(::inet_pton(AF_INET, host, &in->sin_addr) == 1);
  address.length = sizeof(sockaddr_in);
  return address;
}

SocketAddress ipv6_loopback(std::uint16_t port) {
  SocketAddress address;
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  in6->sin6_addr = in6addr_loopback;
  address.length = sizeof(sockaddr_in6);
  return address;
}

// Listeners of the POSIX back-end on `context`'s loop, accepting (or rejecting) everyone.
class Listeners {
 public:
  explicit Listeners(netio::Context& context)
      : context_(context), backend_(context.backend(Endpoint::parse("tcp://127.0.0.1:0"))) {}
  ~Listeners() {
    context_.loop().run_sync([this] {
      for (auto& socket : accepted_) socket->close();
      for (auto& listener : listeners_) listener->close();
      accepted_.clear();
      listeners_.clear();
    });
  }

  // Listens at `host`:0 and returns the port.
  std::uint16_t listen(const std::string& host, bool accept) {
    std::uint16_t port = 0;
    context_.loop().run_sync([&] {
      auto listener = backend_.make_listen_socket();
      netio::LowLevelListenSocket::Callbacks callbacks;
      callbacks.on_request = [accept](const Endpoint&, std::span<const std::byte>) {
        return accept ? AcceptDecision::accept(4096, 4) : AcceptDecision::reject("not this one");
      };
      callbacks.on_accepted = [this](std::unique_ptr<netio::LowLevelReceiveSocket> socket) {
        accepted_.push_back(std::move(socket));
        ++accepted;
      };
      listener->listen(Endpoint::parse("tcp://" + host + ":0"), std::move(callbacks));
      port = listener->local_endpoint().port;
      listeners_.push_back(std::move(listener));
    });
    return port;
  }

  std::atomic<int> accepted{0};

 private:
  netio::Context& context_;
  netio::Backend& backend_;
  std::vector<std::unique_ptr<netio::LowLevelListenSocket>> listeners_;
  std::vector<std::unique_ptr<netio::LowLevelReceiveSocket>> accepted_;  // loop thread
};

// A POSIX send socket connecting to `addresses` on `context`'s loop; destroyed there.
class Connector {
 public:
  Connector(netio::Context& context, std::vector<SocketAddress> addresses, const Endpoint& name) : context_(context) {
    context_.loop().run_sync([&] {
      socket_ = std::make_unique<netio::posix::PosixSendSocket>(context_.loop(), netio::posix::tcp_family());
      netio::LowLevelSendSocket::Callbacks callbacks;
      callbacks.on_connected = [this](const netio::ConnectionInfo&) { connected = true; };
      callbacks.on_connect_failed = [this](const Error& error) {
        std::lock_guard lock(mutex_);
        failure_ = error;
      };
      socket_->connect_to(std::move(addresses), name, {}, std::move(callbacks));
    });
  }
  ~Connector() {
    context_.loop().run_sync([this] { socket_.reset(); });
  }

  std::optional<Error> failure() {
    std::lock_guard lock(mutex_);
    return failure_;
  }
  bool settled() { return connected || failure().has_value(); }

  std::atomic<bool> connected{false};

 private:
  netio::Context& context_;
  std::unique_ptr<netio::posix::PosixSendSocket> socket_;
  std::mutex mutex_;
  std::optional<Error> failure_;
};

}  // namespace

TEST_CASE("A host name's addresses: every one, each once, a numeric host its own only", "[posix][address]") {
  const auto numeric = netio::detail::resolve_all(Endpoint::parse("tcp://127.0.0.1:5000"), false);
  REQUIRE(numeric.size() == 1);
  CHECK(netio::detail::to_string(numeric[0]) == "127.0.0.1:5000");
  CHECK(netio::detail::to_string(netio::detail::resolve_all(Endpoint::parse("tcp://[::1]:7"), false).at(0)) ==
        "[::1]:7");

  const auto named = netio::detail::resolve_all(Endpoint::parse("tcp://localhost:5000"), false);
  REQUIRE(!named.empty());
  bool ipv4_loopback = false;
  for (std::size_t i = 0; i < named.size(); ++i) {
    if (netio::detail::to_string(named[i]) == "127.0.0.1:5000") ipv4_loopback = true;
    for (std::size_t j = i + 1; j < named.size(); ++j) {
      CHECK(netio::detail::to_string(named[i]) != netio::detail::to_string(named[j]));
    }
  }
  CHECK(ipv4_loopback);
  CHECK_THROWS_MATCHES(netio::detail::resolve_all(Endpoint::parse("tcp://no-such-host.invalid:5000"), false), Error,
                       Catch::Matchers::Predicate<Error>([](const Error& e) {
                         return e.code() == Errc::resolve_failed &&
                                std::string(e.what()).find("no-such-host.invalid") != std::string::npos;
                       }));
}

TEST_CASE("A POSIX send socket tries its host's addresses in turn until one takes the connection", "[posix][address]") {
  netio::Context context(netio::test::context_options());
  Listeners listeners(context);
  const std::uint16_t port = listeners.listen("127.0.0.1", true);
  // ::1 and 127.0.0.2 refuse (nobody listens there at that port): the third address is the server.
  Connector connector(context, {ipv6_loopback(port), ipv4("127.0.0.2", port), ipv4("127.0.0.1", port)},
                      Endpoint::parse("tcp://server.test:" + std::to_string(port)));
  REQUIRE(eventually([&] { return connector.settled(); }));
  if (const auto failure = connector.failure()) FAIL(failure->what());
  CHECK(connector.connected);
  CHECK(eventually([&] { return listeners.accepted == 1; }));
}

TEST_CASE("A POSIX send socket that no address takes fails naming every address and why", "[posix][address]") {
  netio::Context context(netio::test::context_options());
  std::uint16_t closed_port = 0;
  {
    Listeners gone(context);
    closed_port = gone.listen("127.0.0.1", true);
  }
  Connector connector(context, {ipv4("127.0.0.2", closed_port), ipv4("127.0.0.1", closed_port)},
                      Endpoint::parse("tcp://server.test:" + std::to_string(closed_port)));
  REQUIRE(eventually([&] { return connector.settled(); }));
  const auto failure = connector.failure();
  REQUIRE(failure.has_value());
  CHECK(failure->code() == Errc::connection_refused);
  const std::string text = failure->what();
  INFO(text);
  CHECK(text.find("server.test:" + std::to_string(closed_port)) != std::string::npos);
  CHECK(text.find("each of its 2 addresses") != std::string::npos);
  CHECK(text.find("127.0.0.2:" + std::to_string(closed_port)) != std::string::npos);
  CHECK(text.find("127.0.0.1:" + std::to_string(closed_port)) != std::string::npos);
}

TEST_CASE("A POSIX send socket does not take a rejected handshake to the next address", "[posix][address]") {
  netio::Context context(netio::test::context_options());
  Listeners listeners(context);
  const std::uint16_t rejecting = listeners.listen("127.0.0.1", false);
  const std::uint16_t accepting = listeners.listen("127.0.0.2", true);
  // The first address answers: a netio service that said no is the answer, not a wrong address.
  Connector connector(context, {ipv4("127.0.0.1", rejecting), ipv4("127.0.0.2", accepting)},
                      Endpoint::parse("tcp://server.test:1"));
  REQUIRE(eventually([&] { return connector.settled(); }));
  const auto failure = connector.failure();
  REQUIRE(failure.has_value());
  CHECK(failure->code() == Errc::handshake_rejected);
  CHECK(std::string(failure->what()).find("not this one") != std::string::npos);
  CHECK(listeners.accepted == 0);
}
