// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_errors.hpp"

#include "backends/fabric/libfabric_library.hpp"

#include <rdma/fi_errno.h>

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

namespace netio::fabric {

std::string fi_error_text(int rc) { return fmt::format("{} ({})", libfabric().strerror(std::abs(rc)), rc); }

std::string queue_error_text(int error, int provider_errno, const char* provider_text, std::size_t capacity) {
  const std::string base = libfabric().strerror(std::abs(error));
  if (provider_errno == 0 || provider_text == nullptr) return base;
  std::string text(provider_text, ::strnlen(provider_text, capacity));
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '?')) text.pop_back();
  const bool says_nothing = text.empty() || text == base || text == "Success" || text.starts_with("Unknown error");
  if (says_nothing) return fmt::format("{} (provider error {})", base, provider_errno);
  return fmt::format("{} ({})", base, text);
}

Error call_failed(std::string_view context, std::string_view call, int rc, Errc code) {
  return Error(code, fmt::format("{}: {} failed: {}", context, call, fi_error_text(rc)));
}

}  // namespace netio::fabric
