// SPDX-License-Identifier: MIT
#include "netio/error.hpp"

#include <cstring>

namespace netio {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "netio"; }
  std::string message(int value) const override {
    switch (static_cast<Errc>(value)) {
      case Errc::malformed_endpoint: return "malformed endpoint";
      case Errc::resolve_failed: return "cannot resolve host";
      case Errc::connection_refused: return "connection refused";
      case Errc::handshake_rejected: return "handshake rejected";
      case Errc::protocol_error: return "protocol error";
      case Errc::disconnected: return "disconnected";
      case Errc::timeout: return "timed out";
      case Errc::closed: return "closed";
      case Errc::message_too_large: return "message too large";
      case Errc::backend_error: return "back-end error";
      case Errc::provider_unavailable: return "back-end unavailable";
      case Errc::would_block: return "would block the event-loop thread";
      case Errc::invalid_option: return "invalid option";
    }
    return "unknown netio error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), error_category()}; }

Error system_error(int errno_value, const std::string& what) {
  const std::error_code code(errno_value, std::system_category());
  return Error(code, what + ": " + code.message());
}

}  // namespace netio
