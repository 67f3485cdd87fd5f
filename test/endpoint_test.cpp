// SPDX-License-Identifier: MIT
#include "netio/endpoint.hpp"
#include "netio/error.hpp"

#include <catch2/catch.hpp>

using netio::Endpoint;

TEST_CASE("well-formed endpoints parse", "[endpoint]") {
  auto e = Endpoint::parse("tcp://127.0.0.1:5000");
  CHECK(e.scheme == "tcp");
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 5000);
  CHECK(e.to_string() == "tcp://127.0.0.1:5000");

  e = Endpoint::parse("tcp://[::1]:0");
  CHECK(e.host == "::1");
  CHECK(e.port == 0);
  CHECK(e.to_string() == "tcp://[::1]:0");

  e = Endpoint::parse("tcp://localhost:65535");
  CHECK(e.host == "localhost");
  CHECK(e.port == 65535);

  e = Endpoint::parse("fabric://10.0.0.1:7000?provider=verbs");
  CHECK(e.scheme == "fabric");
  CHECK(e.option("provider") == "verbs");
  CHECK(e.to_string() == "fabric://10.0.0.1:7000?provider=verbs");
  CHECK(Endpoint::parse(e.to_string()) == e);

  e = Endpoint::parse("fabric://node-07.cluster:1");
  CHECK(e.options.empty());
  CHECK(e.with_port(9).port == 9);
}

TEST_CASE("malformed endpoints give an error naming the string and the problem", "[endpoint]") {
  struct Case {
    const char* text;
    const char* why;
  };
  const Case cases[] = {
      {"127.0.0.1:5000", "expected tcp://HOST:PORT"},
      {"udp://127.0.0.1:5000", "unknown scheme 'udp'"},
      {"tcp://127.0.0.1", "missing ':PORT'"},
      {"tcp://127.0.0.1:", "missing port"},
      {"tcp://:5000", "missing host"},
      {"tcp://bad host:5000", "invalid host 'bad host'"},
      // shm://NAME:PORT: the field is a name, and the message says so.
      {"shm://bad name:1", "invalid name 'bad name'"},
      {"shm://:1", "missing name"},
      {"tcp://127.0.0.1:65536", "port '65536'"},
      {"tcp://127.0.0.1:50x", "port '50x'"},
      {"tcp://127.0.0.1:-1", "port '-1'"},
      {"tcp://::1:5000", "brackets"},
      {"tcp://[::1:5000", "closing ']'"},
      {"tcp://[::1]5000", "missing ':PORT'"},
      {"tcp://127.0.0.1:5000?provider=tcp", "unknown option 'provider'"},
      {"fabric://127.0.0.1:5000?provider=", "empty provider (write provider=VALUE)"},
      {"fabric://127.0.0.1:5000?color=blue", "unknown option 'color'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    try {
      Endpoint::parse(c.text);
      FAIL("accepted a malformed endpoint");
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::malformed_endpoint);
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains(c.text));
      CHECK_THAT(what, Catch::Contains(c.why));
    }
  }
}
