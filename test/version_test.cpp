// SPDX-License-Identifier: MIT
// The version macros, netio::version() and the CMake and pkg-config packages all say the
// version of project(netio VERSION ...).
#include "netio/version.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#ifndef NETIO_TEST_PROJECT_VERSION
#error "test/CMakeLists.txt defines NETIO_TEST_PROJECT_VERSION and NETIO_TEST_BINARY_DIR for this file"
#endif

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  INFO(path);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("the version macros say the project's version", "[version]") {
  const std::string joined = std::to_string(NETIO_VERSION_MAJOR) + "." + std::to_string(NETIO_VERSION_MINOR) + "." +
                             std::to_string(NETIO_VERSION_PATCH);
  CHECK(joined == NETIO_VERSION_STRING);
  CHECK(std::string(NETIO_VERSION_STRING) == NETIO_TEST_PROJECT_VERSION);
  STATIC_REQUIRE(NETIO_VERSION == NETIO_VERSION_MAJOR * 10000 + NETIO_VERSION_MINOR * 100 + NETIO_VERSION_PATCH);
  STATIC_REQUIRE(NETIO_MAKE_VERSION(0, 1, 0) == 100);
  STATIC_REQUIRE(NETIO_VERSION >= NETIO_MAKE_VERSION(0, 1, 0));
}

TEST_CASE("netio::version() is the headers' version", "[version]") {
  CHECK(netio::version() == NETIO_VERSION_STRING);
  const netio::Version v = netio::version_numbers();
  CHECK(v.major_number == NETIO_VERSION_MAJOR);
  CHECK(v.minor_number == NETIO_VERSION_MINOR);
  CHECK(v.patch_number == NETIO_VERSION_PATCH);
}

TEST_CASE("the CMake package and the pkg-config file carry the same version", "[version]") {
  const std::string binary_dir = NETIO_TEST_BINARY_DIR;
  const std::string config_version = read_file(binary_dir + "/netioConfigVersion.cmake");
  CHECK_THAT(config_version, Catch::Contains("set(PACKAGE_VERSION \"" NETIO_VERSION_STRING "\")"));
  const std::string pc = read_file(binary_dir + "/netio.pc");
  CHECK_THAT(pc, Catch::Contains("\nVersion: " NETIO_VERSION_STRING "\n"));
}
