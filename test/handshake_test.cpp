// SPDX-License-Identifier: MIT
#include "handshake.hpp"
#include "netio/error.hpp"

#include <catch2/catch.hpp>

using namespace netio::detail;

TEST_CASE("a hello round-trips through its 16-byte encoding", "[handshake]") {
  const Hello hello{SocketKind::high_throughput_send, 1 << 20};
  const auto bytes = encode_hello(hello);
  REQUIRE(bytes.size() == hello_size);
  CHECK(bytes[0] == std::byte{'N'});
  CHECK(bytes[3] == std::byte{'O'});
  const Hello decoded = decode_hello(bytes);
  CHECK(decoded.kind == SocketKind::high_throughput_send);
  CHECK(decoded.buffer_size == (1u << 20));
  CHECK(decoded.version == protocol_version);
}

TEST_CASE("an authenticating hello carries its nonce", "[handshake][auth]") {
  Hello hello{SocketKind::low_latency_send, 0};
  hello.challenge = AuthNonce{};
  for (std::size_t i = 0; i < auth_nonce_size; ++i) (*hello.challenge)[i] = static_cast<std::byte>(i + 1);
  const auto bytes = encode_hello(hello);
  REQUIRE(bytes.size() == authenticating_hello_size);
  CHECK(bytes[7] == std::byte{hello_flag_authenticate});
  const Hello decoded = decode_hello(bytes);
  REQUIRE(decoded.challenge);
  CHECK(*decoded.challenge == *hello.challenge);
  CHECK_FALSE(decode_hello(encode_hello(Hello{SocketKind::low_latency_send, 0})).challenge);
}

TEST_CASE("a bad hello is refused with a reason", "[handshake]") {
  auto bytes = encode_hello(Hello{SocketKind::low_latency_send, 0});
  auto refused_with = [](std::span<const std::byte> b, const char* why) {
    try {
      decode_hello(b);
      FAIL("accepted a bad hello");
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::handshake_rejected);
      CHECK_THAT(e.what(), Catch::Contains(why));
    }
  };
  SECTION("wrong magic") {
    bytes[0] = std::byte{'X'};
    refused_with(bytes, "not a netio socket");
  }
  SECTION("wrong length") { refused_with(std::span<const std::byte>(bytes).first(15), "not a netio socket"); }
  SECTION("other protocol version") {
    bytes[4] = std::byte{7};
    refused_with(bytes, "protocol version 7");
  }
  SECTION("unknown socket kind") {
    bytes[6] = std::byte{99};
    refused_with(bytes, "unknown socket kind 99");
  }
  SECTION("reserved flag bits not zero") {
    bytes[7] = std::byte{0x82};  // a later version's flags this side would silently ignore
    refused_with(bytes, "flags byte 7 is 130, with reserved bits set");
  }
  SECTION("the authenticate flag without its nonce") {
    bytes[7] = std::byte{1};
    refused_with(bytes, "16 bytes where 32 were expected");
  }
  SECTION("a nonce without the authenticate flag") {
    bytes.resize(authenticating_hello_size);
    refused_with(bytes, "32 bytes where 16 were expected");
  }
  SECTION("a kind the receiver does not take") {
    try {
      expect_hello(bytes, SocketKind::high_throughput_send, "a high-throughput receive socket");
      FAIL("accepted the wrong kind");
    } catch (const netio::Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("a low-latency send socket, but this is a high-throughput receive socket"));
    }
  }
}
