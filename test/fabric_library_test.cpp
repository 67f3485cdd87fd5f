// libfabric loaded at run time (backends/fabric/libfabric_library.hpp): what a missing or
// wrong library says, and that the loaded one answers as a linked one would. That nothing
// loads it before a fabric:// endpoint is used is checked in a process of its own
// (support/libfabric_on_first_use.cpp).
#include "backends/fabric/libfabric_library.hpp"
#include "netio/error.hpp"

#include <rdma/fi_errno.h>

#include <catch2/catch.hpp>

#include <string>

using netio::fabric::libfabric;
using netio::fabric::load_libfabric;

TEST_CASE("a libfabric that cannot be loaded is named, with the reason", "[fabric]") {
  try {
    load_libfabric("libnetio-no-such-libfabric.so.1");
    FAIL("loaded a library that does not exist");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::provider_unavailable);
    const std::string what = e.what();
    CHECK(what.find("cannot load libfabric (libnetio-no-such-libfabric.so.1)") != std::string::npos);
    CHECK(what.find("No such file") != std::string::npos);  // dlerror()'s reason
    CHECK(what.find("tcp://") != std::string::npos);         // what to do instead
  }
}

TEST_CASE("a library without libfabric's functions is refused, naming the function", "[fabric]") {
  try {
    load_libfabric("libc.so.6");
    FAIL("took libc for libfabric");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::provider_unavailable);
    CHECK(std::string(e.what()).find("libc.so.6 has no fi_getinfo") != std::string::npos);
  }
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
