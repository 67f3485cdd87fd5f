// SPDX-License-Identifier: MIT
// The back-ends the shared integration tests run against. Every behaviour the back-ends
// promise is tested on each (tcp, shm, and fabric when built): a TEST_CASE takes `const auto base =
// GENERATE(loopback_endpoints())` and listens on base (port 0), so each back-end gets its own section in the report. A
// netio built without libfabric (NETIO_WITH_FABRIC=OFF) tests tcp only.
#pragma once

#include "netio/backend/registry.hpp"
#include "netio/endpoint.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

namespace netio::test {

inline bool fabric_built() {
  const auto schemes = registered_backend_schemes();
  return std::find(schemes.begin(), schemes.end(), "fabric") != schemes.end();
}

// The decorator runs (NETIO_TEST_WRAP_BACKENDS, NETIO_TEST_EMULATE) test the decorators,
// which know no back-end: tcp and fabric show they pass every back-end's buffers through,
// and shm:// over them too would only add CI time.
inline bool decorated_run() {
  return std::getenv("NETIO_TEST_WRAP_BACKENDS") != nullptr || std::getenv("NETIO_TEST_EMULATE") != nullptr;
}

// NETIO_TEST_SCHEMES=tcp,fabric (say) runs the shared suites over those back-ends only: what
// a CI stage leaves out, or what a time measurement compares.
inline bool scheme_selected(std::string_view scheme) {
  const char* selected = std::getenv("NETIO_TEST_SCHEMES");
  if (selected == nullptr) return true;
  const std::string list = std::string(",") + selected + ",";
  return list.find(std::string(",") + std::string(scheme) + ",") != std::string::npos;
}

inline auto loopback_endpoints() {
  std::vector<std::string> endpoints;
  // Room for all three up front: GCC 12 at -O2/-O3 otherwise sees the growth from one to
  // three strings inlined and warns of a write past the first allocation (-Wstringop-overflow).
  endpoints.reserve(3);
  if (scheme_selected("tcp")) endpoints.push_back("tcp://127.0.0.1:0");
  if (scheme_selected("shm") && !decorated_run()) endpoints.push_back("shm://netio-test:0");
  if (scheme_selected("fabric") && fabric_built()) endpoints.push_back("fabric://127.0.0.1:0?provider=tcp");
  if (endpoints.empty())
    FAIL("NETIO_TEST_SCHEMES selects no back-end this netio has: " << std::getenv("NETIO_TEST_SCHEMES"));
  return Catch::Generators::from_range(endpoints);
}

// The host a listener on `base` sees this process's connections come from: the loopback
// address, or on shm:// the process's own name (pidPID).
inline std::string own_peer_host(const Endpoint& base) {
  return base.scheme == "shm" ? "pid" + std::to_string(::getpid()) : base.host;
}

using namespace std::chrono_literals;

// Bytes whose value depends on the message number and the position: a swapped, shifted or
// corrupted message does not compare equal.
inline std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed) {
  std::vector<std::byte> bytes(size);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& b : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  return bytes;
}

// Polls `condition` until it holds or `timeout` passes; returns whether it held.
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace netio::test
