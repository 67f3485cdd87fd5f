// SPDX-License-Identifier: MIT
// Back-ends by scheme: the registry, how a Context uses it, and what it says when a scheme
// has no back-end.
#include "netio/backend/event_loop.hpp"
#include "netio/backend/registry.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"
#include "support/counting_backend.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

using namespace std::chrono_literals;

TEST_CASE("the registry lists the built-in back-ends", "[registry]") {
  const auto schemes = netio::registered_backend_schemes();
  CHECK(std::find(schemes.begin(), schemes.end(), "tcp") != schemes.end());
  CHECK(std::is_sorted(schemes.begin(), schemes.end()));
}

TEST_CASE("a scheme without a back-end is refused, naming it and the registered schemes", "[registry]") {
  netio::Context context;
  try {
    context.backend("carrier-pigeon");
    FAIL("a back-end was made for an unregistered scheme");
  } catch (const netio::Error& e) {
    CHECK_THAT(e.what(),
               Catch::Contains("'carrier-pigeon'") && Catch::Contains("registered: ") && Catch::Contains("tcp"));
  }
  if (!netio::test::fabric_built()) {
    const auto endpoint = netio::Endpoint::parse("fabric://127.0.0.1:5000");
    try {
      context.backend(endpoint);
      FAIL("a fabric back-end was made by a netio built without libfabric");
    } catch (const netio::Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("fabric://127.0.0.1:5000") && Catch::Contains("without libfabric"));
    }
  }
}

TEST_CASE("a registered back-end is made once per context, on the loop thread, and wrapped", "[registry]") {
  std::atomic<int> made{0};
  std::atomic<bool> on_loop_thread{true};
  netio::register_backend("test-registry", [&](netio::EventLoop& loop) {
    ++made;
    if (!loop.in_loop_thread()) on_loop_thread = false;
    return netio::make_registered_backend("tcp", loop, "the test back-end");
  });
  const auto schemes = netio::registered_backend_schemes();
  CHECK(std::find(schemes.begin(), schemes.end(), "test-registry") != schemes.end());

  auto counts = std::make_shared<netio::test::BackendCallCounts>();
  std::string wrapped_scheme;
  netio::ContextOptions options;
  options.wrap_backend = [&, counts](std::string_view scheme, std::unique_ptr<netio::Backend> inner,
                                     netio::EventLoop&) {
    wrapped_scheme = scheme;
    return std::make_unique<netio::test::CountingBackend>(std::move(inner), counts);
  };
  {
    netio::Context context(std::move(options));
    netio::Backend& first = context.backend("test-registry");
    netio::Backend& again = context.backend("test-registry");
    CHECK(&first == &again);
    CHECK(made == 1);
    CHECK(on_loop_thread);
    CHECK(wrapped_scheme == "test-registry");
    CHECK(counts->backends == 1);
    CHECK(dynamic_cast<netio::test::CountingBackend*>(&first) != nullptr);
  }
  netio::Context other;  // each context makes its own
  other.backend("test-registry");
  CHECK(made == 2);
  CHECK_THROWS_AS(netio::register_backend(
                      "", [](netio::EventLoop& loop) { return netio::make_registered_backend("tcp", loop, "x"); }),
                  netio::Error);
}

TEST_CASE("a loop callback may make a back-end while another thread makes the first one of that kind",
          "[registry][context]") {
  // Once, a user thread making a back-end held the context's lock while it waited for the
  // loop, and a loop callback asking for the same kind waited for that lock: neither moved.
  // The loop task below asks while the user thread is (on the old code) inside that wait.
  // Should it deadlock, the context and the stuck thread are left behind, not joined.
  auto context = std::make_unique<netio::Context>();
  std::atomic<bool> user_asking{false};
  std::promise<void> callback_done;
  std::promise<void> user_done;
  auto callback_finished = callback_done.get_future();
  auto user_finished = user_done.get_future();
  netio::Context* shared = context.get();

  shared->loop().post([shared, &user_asking, &callback_done] {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!user_asking && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    std::this_thread::sleep_for(50ms);  // the user thread is waiting for this loop by now
    auto socket = shared->backend("tcp").make_send_socket();
    socket.reset();
    callback_done.set_value();
  });
  std::thread user([shared, &user_asking, &user_done] {
    user_asking = true;
    shared->backend("tcp");
    user_done.set_value();
  });

  const bool callback_ok = callback_finished.wait_for(10s) == std::future_status::ready;
  const bool user_ok = user_finished.wait_for(10s) == std::future_status::ready;
  if (!callback_ok || !user_ok) {
    user.detach();
    (void)context.release();  // deadlocked: destroying it would wait forever
    FAIL("deadlock: the loop callback " << (callback_ok ? "finished" : "is stuck") << ", the user thread "
                                        << (user_ok ? "finished" : "is stuck"));
  }
  user.join();
  CHECK(&shared->backend("tcp") == &shared->backend(netio::Endpoint::parse("tcp://127.0.0.1:1")));
}

TEST_CASE("Endpoint::parse accepts a scheme a test registers, and sockets on it use that back-end",
          "[registry][endpoint]") {
  // Before registration the scheme is unknown, and the error names the registered ones.
  try {
    (void)netio::Endpoint::parse("counted-tcp://127.0.0.1:0");
    FAIL("an unregistered scheme parsed");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::malformed_endpoint);
    CHECK_THAT(e.what(), Catch::Contains("unknown scheme 'counted-tcp'") && Catch::Contains("tcp"));
  }

  // A decorator of tcp that counts every call: what goes over "counted-tcp://" went through it.
  auto counts = std::make_shared<netio::test::BackendCallCounts>();
  netio::register_backend("counted-tcp", [counts](netio::EventLoop& loop) -> std::unique_ptr<netio::Backend> {
    return std::make_unique<netio::test::CountingBackend>(netio::make_registered_backend("tcp", loop, "counted-tcp"),
                                                          counts);
  });
  const auto local = netio::Endpoint::parse("counted-tcp://127.0.0.1:0");
  CHECK(local.scheme == "counted-tcp");
  CHECK(local.to_string() == "counted-tcp://127.0.0.1:0");
  CHECK(netio::Endpoint::parse(local.to_string()) == local);
  CHECK_THROWS_AS(netio::Endpoint::parse("counted-tcp://127.0.0.1:0?provider=x"), netio::Error);

  netio::Context context;
  std::promise<std::string> got;
  netio::LowLatencyReceiveSocket receiver(context, local, [&](std::span<const std::byte> message, const netio::Peer&) {
    got.set_value(std::string(reinterpret_cast<const char*>(message.data()), message.size()));
  });
  const auto bound = receiver.local_endpoint();
  CHECK(bound.scheme == "counted-tcp");
  {
    netio::LowLatencySendSocket sender(context, netio::Endpoint::parse(bound.to_string()));
    const std::string text = "through the registered back-end";
    sender.send(std::as_bytes(std::span(text)));
    auto future = got.get_future();
    REQUIRE(future.wait_for(10s) == std::future_status::ready);
    CHECK(future.get() == text);
  }
  CHECK(counts->backends == 1);
  CHECK(counts->listen_sockets == 1);
  CHECK(counts->send_sockets >= 1);
  CHECK(counts->sends >= 1);
}

TEST_CASE("register_backend refuses a malformed scheme with Errc::invalid_option naming it", "[registry]") {
  const auto factory = [](netio::EventLoop& loop) { return netio::make_registered_backend("tcp", loop, "x"); };
  for (const char* scheme : {"", "9lives", "has space", "a/b", "a:b"}) {
    INFO(scheme);
    try {
      netio::register_backend(scheme, factory);
      FAIL("a malformed scheme was registered");
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::invalid_option);
      CHECK_THAT(e.what(), Catch::Contains(std::string("'") + scheme + "'"));
    }
  }
  try {
    netio::register_backend("no-factory", nullptr);
    FAIL("an empty factory was registered");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    CHECK_THAT(e.what(), Catch::Contains("'no-factory'"));
  }
}
