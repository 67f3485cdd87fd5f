// SPDX-License-Identifier: MIT
// --allow and --key-file (tools/common/peer_access_options.hpp): parsed once for every tool,
// bad values refused at parse time with the parser's message.
#include "common/peer_access_options.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using netio::tools::PeerAccess;

namespace {

// Parses `args` with the options of a listening tool; returns CLI11's message ("" if fine).
std::string parse(PeerAccess& access, std::vector<std::string> args, bool listens = true) {
  CLI::App app("test");
  netio::tools::add_peer_access_options(app, access, listens);
  args.insert(args.begin(), "tool");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the tools' --allow takes a list of networks and refuses bad ones", "[tools][admission]") {
  PeerAccess access;
  CHECK(parse(access, {"--allow", "10.0.0.0/8,::1"}).empty());
  REQUIRE(access.allow.size() == 2);
  CHECK(access.admission().allow.size() == 2);
  CHECK_FALSE(access.admission().key);
  PeerAccess bad;
  CHECK_THAT(parse(bad, {"--allow", "10.0.0.0/40"}), Catch::Contains("prefix length 40 exceeds 32"));
  PeerAccess sender;
  CHECK_THAT(parse(sender, {"--allow", "10.0.0.0/8"}, false), Catch::Contains("--allow"));  // not a sender's option
}

TEST_CASE("the tools' --key-file loads a key and refuses a bad file", "[tools][auth]") {
  const std::string path = "/tmp/netio_tools_key_" + std::to_string(::getpid());
  std::ofstream(path) << std::string(64, 'e') << "\n";
  ::chmod(path.c_str(), 0600);
  PeerAccess access;
  CHECK(parse(access, {"--key-file", path}).empty());
  REQUIRE(access.key);
  CHECK(access.key->bytes()[0] == std::byte{0xee});
  CHECK(access.admission().key);
  ::chmod(path.c_str(), 0644);
  PeerAccess exposed;
  CHECK_THAT(parse(exposed, {"--key-file", path}), Catch::Contains("readable or writable by group or others"));
  std::remove(path.c_str());
  PeerAccess missing;
  CHECK_THAT(parse(missing, {"--key-file", path}), Catch::Contains(path));
}
