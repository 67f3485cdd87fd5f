// SPDX-License-Identifier: MIT
// The text of libfabric queue errors (backends/fabric/fabric_errors.hpp): what providers
// answer fi_eq_strerror / fi_cq_strerror with is added only when it says something, and
// never read past its buffer or printed raw.
#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/libfabric_library.hpp"

#include <rdma/fi_errno.h>

#include <catch2/catch.hpp>

#include <array>
#include <cstring>

using netio::fabric::queue_error_text;

namespace {
std::string fi_text(int error) { return netio::fabric::libfabric().strerror(error); }
}  // namespace

TEST_CASE("queue error texts add what the provider says, and only that", "[fabric][faults]") {
  const std::string refused = fi_text(FI_ECONNREFUSED);
  CHECK(queue_error_text(FI_ECONNREFUSED, 0, "Success", 256) == refused);
  CHECK(queue_error_text(FI_ECONNREFUSED, 0, nullptr, 256) == refused);
  CHECK(queue_error_text(FI_ECONNREFUSED, 111, "Success", 256) == refused + " (provider error 111)");
  CHECK(queue_error_text(FI_ECONNREFUSED, -111, "Unknown error -111", 256) == refused + " (provider error -111)");
  CHECK(queue_error_text(FI_ECONNREFUSED, 111, refused.c_str(), 256) == refused + " (provider error 111)");
  CHECK(queue_error_text(FI_EIO, 5, "remote access error", 256) == fi_text(FI_EIO) + " (remote access error)");
}

TEST_CASE("a provider text filling its buffer without a NUL is cut at the buffer", "[fabric][faults]") {
  // strncpy(buf, text, sizeof buf) leaves no terminator when the text is that long.
  std::array<char, 16> buffer{};
  std::memcpy(buffer.data(), "0123456789abcdef", buffer.size());
  std::array<char, 32> guarded{};
  std::memcpy(guarded.data(), buffer.data(), buffer.size());
  std::memcpy(guarded.data() + buffer.size(), "GARBAGE-BEYOND!", 16);
  const auto text = queue_error_text(FI_EIO, 5, guarded.data(), buffer.size());
  CHECK(text == fi_text(FI_EIO) + " (0123456789abcdef)");
}

TEST_CASE("unprintable provider bytes are not printed raw", "[fabric][faults]") {
  const char binary[] = {'b', 'a', 'd', '\x01', '\x02', 'x', '\n', '\0'};
  const auto text = queue_error_text(FI_EIO, 5, binary, sizeof binary);
  CHECK(text == fi_text(FI_EIO) + " (bad??x)");
}
