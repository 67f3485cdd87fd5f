// SPDX-License-Identifier: MIT
// Every parser of user strings: endpoints (netio/endpoint.hpp) and shm:// names as socket
// addresses (backends/shm/unix_family.hpp), the tools' sizes and
// durations (tools/common/units.hpp) and emulation specs (netio/emulation.hpp). A bad string
// is refused with an error (netio::Error, or a ParseResult failure); what parses must print
// and parse back to the same value.
//
// Specs naming a table file (table:file=PATH) are skipped: the fuzzer would otherwise open
// whatever path it makes up (/dev/zero, a FIFO) and hang on reading it, which says nothing
// about the parser; table files have their own tests (emulation_spec_test.cpp).
#include "backends/shm/unix_family.hpp"
#include "common/units.hpp"
#include "netio/emulation.hpp"
#include "netio/endpoint.hpp"
#include "netio/error.hpp"

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto endpoint = netio::Endpoint::parse(text);
    const auto again = netio::Endpoint::parse(endpoint.to_string());
    FUZZ_CHECK(again.to_string() == endpoint.to_string());
    FUZZ_CHECK(again.port == endpoint.port && again.host == endpoint.host && again.scheme == endpoint.scheme);
    if (endpoint.scheme == "shm") {
      // Throws resolve_failed for what is no shm:// name; else an abstract name that fits.
      const auto address = netio::shm::abstract_address(endpoint);
      FUZZ_CHECK(address.length <= sizeof(sockaddr_un) && address.get()->sa_data[0] == '\0');
    }
  } catch (const netio::Error&) {
  }

  if (const auto parsed = netio::tools::parse_size(text)) {
    const auto again = netio::tools::parse_size(netio::tools::format_size_compact(parsed.value()));
    FUZZ_CHECK(again && again.value() == parsed.value());
  } else {
    FUZZ_CHECK(!parsed.error().empty());
  }
  if (const auto parsed = netio::tools::parse_duration(text)) {
    FUZZ_CHECK(parsed.value().count() >= 0);
    netio::tools::format_duration(parsed.value());
  } else {
    FUZZ_CHECK(!parsed.error().empty());
  }

  if (text.find("file") == std::string_view::npos) {
    try {
      const auto config = netio::parse_emulation_spec(text);
      (void)config;
    } catch (const netio::Error&) {
    }
  }
  return 0;
}
