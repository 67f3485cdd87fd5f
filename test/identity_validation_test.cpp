// SPDX-License-Identifier: MIT
// Identities a peer declares cannot forge log lines or overrun the introduction's documented
// size: names are printable UTF-8 of at most 255 bytes, the whole introduction at most 512
// bytes, both checked by the sender before it connects and by the receiver on what arrives;
// whatever is printed passes through netio::printable().
#include "introduction.hpp"
#include "netio/error.hpp"
#include "netio/internal/little_endian.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/printable.hpp"
#include "support/admission_peers.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace {

using namespace netio::test;
using netio::detail::decode_introduction;
using netio::detail::encode_introduction;

// Every line netio logs while it lives.
class IdentityLogLines {
 public:
  IdentityLogLines() {
    netio::set_log_sink([this](netio::LogLevel, std::string_view message) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(message);
    });
  }
  ~IdentityLogLines() { netio::set_log_sink({}); }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

// The introduction's bytes as a hostile sender may write them: no check on the way out.
std::vector<std::byte> raw_introduction(const std::string& name, const std::string& endpoint) {
  std::vector<std::byte> bytes(4 + 1 + name.size() + 2 + endpoint.size());
  netio::detail::store_le<std::uint32_t>(bytes.data(), netio::detail::introduction_magic);
  bytes[4] = static_cast<std::byte>(name.size());
  std::memcpy(bytes.data() + 5, name.data(), name.size());
  netio::detail::store_le<std::uint16_t>(bytes.data() + 5 + name.size(), static_cast<std::uint16_t>(endpoint.size()));
  std::memcpy(bytes.data() + 7 + name.size(), endpoint.data(), endpoint.size());
  return bytes;
}

std::string decode_error(const std::vector<std::byte>& bytes) {
  try {
    decode_introduction(bytes);
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::protocol_error);
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("printable() escapes control characters, invalid UTF-8 and the backslash", "[identity]") {
  CHECK(netio::printable("daq-node-7:1234") == "daq-node-7:1234");
  CHECK(netio::printable("Zürich \xE2\x9C\x93") == "Zürich \xE2\x9C\x93");  // UTF-8 stays
  CHECK(netio::printable("a\nFORGED-LINE") == "a\\x0AFORGED-LINE");
  CHECK(netio::printable("\x1B[31mred") == "\\x1B[31mred");
  CHECK(netio::printable("del\x7F") == "del\\x7F");
  CHECK(netio::printable("c1\xC2\x85") == "c1\\xC2\\x85");       // NEL, a C1 control
  CHECK(netio::printable("bad\xFF\xC3") == "bad\\xFF\\xC3");     // invalid and cut-short UTF-8
  CHECK(netio::printable("\xC0\xAF") == "\\xC0\\xAF");           // an overlong '/'
  CHECK(netio::printable("\xED\xA0\x80") == "\\xED\\xA0\\x80");  // a surrogate
  CHECK(netio::printable("back\\x0A") == "back\\\\x0A");         // an escape cannot be faked
  CHECK(netio::printable(std::string_view("nul\0x", 5)) == "nul\\x00x");

  CHECK(netio::is_printable_utf8("Zürich node"));
  CHECK(netio::is_printable_utf8(""));
  CHECK_FALSE(netio::is_printable_utf8("a\nb"));
  CHECK_FALSE(netio::is_printable_utf8("tab\there"));
  CHECK_FALSE(netio::is_printable_utf8("\xC2\x9B"));
  CHECK_FALSE(netio::is_printable_utf8("\xF4\x90\x80\x80"));  // beyond U+10FFFF
}

TEST_CASE("a send socket refuses a name it could not declare, saying why", "[identity]") {
  auto refused = [](const std::string& name) {
    try {
      encode_introduction({name, std::nullopt});
    } catch (const netio::Error& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    return std::make_pair(std::error_code(), std::string());
  };
  const auto newline = refused("node\nFORGED-LINE netio error: connected");
  CHECK(newline.first == netio::Errc::invalid_option);
  CHECK_THAT(newline.second, Catch::Contains("not printable UTF-8") && Catch::Contains("\\x0A"));
  CHECK_THAT(newline.second, !Catch::Contains("\n"));
  CHECK(refused("\xFF\xFE").first == netio::Errc::invalid_option);
  CHECK(refused(std::string(256, 'n')).first == netio::Errc::message_too_large);
  CHECK(refused(std::string(255, 'n')).second.empty());
  CHECK(refused("Zürich").second.empty());

  netio::Context context;
  netio::LowLatencySendOptions options;
  options.identity.name = "a\rb";
  CHECK_THROWS_AS(netio::LowLatencySendSocket(context, netio::Endpoint::parse("tcp://127.0.0.1:9"), options),
                  netio::Error);
}

TEST_CASE("a receiver decodes only introductions within the documented limits", "[identity]") {
  CHECK(decode_introduction(raw_introduction("node-1", "tcp://10.0.0.1:5000")).name == "node-1");
  CHECK_THAT(decode_error(raw_introduction("x\nFORGED-LINE", "")),
             Catch::Contains("not printable") && Catch::Contains("x\\x0AFORGED-LINE"));
  CHECK_THAT(decode_error(raw_introduction("\x1B]0;title\x07", "")), Catch::Contains("not printable"));
  CHECK_THAT(decode_error(raw_introduction("", "")), Catch::Contains("name is empty"));
  // 64 KiB of endpoint was taken before: the whole introduction is 512 bytes at most.
  const std::string long_host = "tcp://" + std::string(60000, 'h') + ":1";
  CHECK_THAT(decode_error(raw_introduction("node", long_host)), Catch::Contains("beyond the 512"));
  const std::string just_over = "tcp://" + std::string(512 - 4 - 1 - 4 - 2 - 8 + 1, 'h') + ":1";
  CHECK_THAT(decode_error(raw_introduction("node", just_over)), Catch::Contains("beyond the 512"));
  CHECK_THAT(decode_error(raw_introduction("node", "tcp://h\x1B:1")),
             Catch::Contains("endpoint") && Catch::Contains("\\x1B"));
}

TEST_CASE("an introduction with a forged name is refused at the handshake, and logged escaped",
          "[identity][admission]") {
  const auto base = GENERATE(loopback_endpoints());
  IdentityLogLines log_lines;
  const netio::LogLevel level_before = netio::log_level();
  netio::set_log_level(netio::LogLevel::warn);
  netio::Context context;
  std::atomic<int> connected{0};
  netio::LowLatencyReceiveOptions options;
  options.events.on_connected = [&](const netio::Peer&) { ++connected; };
  // The forger and the honest sender are one process: over shm:// the forger's drop would
  // hold the honest one off too (misbehaviour_cooldown, shm_hostile_peers_test.cpp).
  options.admission.misbehaviour_cooldown = {};
  netio::LowLatencyReceiveSocket receiver(
      context, netio::Endpoint::parse(base), [](std::span<const std::byte>, const netio::Peer&) {}, options);
  HelloOnlyPeer forger(context, receiver.local_endpoint());
  REQUIRE(eventually([&] { return forger.connected(); }));
  forger.send(raw_introduction("x\nFORGED-LINE netio error: connected", ""));
  REQUIRE(eventually([&] { return forger.disconnected(); }));

  // A legitimate sender still connects.
  netio::LowLatencySendSocket honest(context, receiver.local_endpoint(), named("honest"));
  honest.send(pattern(16, 0));
  REQUIRE(honest.wait_sent(10s));
  REQUIRE(eventually([&] { return connected.load() == 1; }));

  bool refusal_logged = false;
  for (const auto& line : log_lines.lines()) {
    CHECK(line.find('\n') == std::string::npos);
    CHECK(line.rfind("FORGED-LINE", 0) == std::string::npos);
    if (line.find("x\\x0AFORGED-LINE") != std::string::npos && line.find("not printable") != std::string::npos) {
      refusal_logged = true;
    }
  }
  netio::set_log_level(level_before);
  CHECK(refusal_logged);
}
