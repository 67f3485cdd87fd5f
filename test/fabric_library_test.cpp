// SPDX-License-Identifier: MIT
// libfabric loaded at run time (backends/fabric/libfabric_library.hpp): what a missing or
// wrong library says, and that the loaded one answers as a linked one would. That nothing
// loads it before a fabric:// endpoint is used is checked in a process of its own
// (support/libfabric_on_first_use.cpp).
#include "backends/fabric/libfabric_library.hpp"
#include "netio/error.hpp"

#include <rdma/fi_errno.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using netio::fabric::libfabric;
using netio::fabric::load_libfabric;

namespace {

// Errc::provider_unavailable whose message contains every one of `parts`.
auto provider_unavailable_naming(std::vector<std::string> parts) {
  std::string description = "Errc::provider_unavailable naming";
  for (const auto& part : parts) description += " '" + part + "'";
  return Catch::Predicate<netio::Error>(
      [parts](const netio::Error& e) {
        const std::string what = e.what();
        return e.code() == netio::Errc::provider_unavailable &&
               std::all_of(parts.begin(), parts.end(),
                           [&](const auto& part) { return what.find(part) != std::string::npos; });
      },
      description);
}

}  // namespace

TEST_CASE("a libfabric that cannot be loaded is named, with the reason", "[fabric]") {
  CHECK_THROWS_MATCHES(load_libfabric("libnetio-no-such-libfabric.so.1"), netio::Error,
                       provider_unavailable_naming({"cannot load libfabric (libnetio-no-such-libfabric.so.1)",
                                                    "No such file",  // dlerror()'s reason
                                                    "tcp://"}));     // what to do instead
}

TEST_CASE("a library without libfabric's functions is refused, naming the function", "[fabric]") {
  CHECK_THROWS_MATCHES(load_libfabric("libc.so.6"), netio::Error,
                       provider_unavailable_naming({"libc.so.6 has no fi_getinfo"}));
}

TEST_CASE("the loaded libfabric answers as the linked one would", "[fabric]") {
  const auto& library = libfabric();
  CHECK(netio::fabric::libfabric_loaded());
  CHECK(FI_MAJOR(library.version()) >= 1);
  CHECK(std::string(library.strerror(FI_ECONNREFUSED)) == "Connection refused");
  fi_info* empty = library.dupinfo(nullptr);  // fi_allocinfo()
  REQUIRE(empty != nullptr);
  CHECK(empty->ep_attr != nullptr);
  CHECK(empty->fabric_attr != nullptr);
  library.freeinfo(empty);
}
