// SPDX-License-Identifier: MIT
/// @file
/// Errors of netio: one style everywhere.
///
/// Synchronous calls throw netio::Error (a std::runtime_error carrying a std::error_code). Asynchronous failures
/// (a refused connection, a peer that vanished) are delivered to callbacks as a
/// netio::Error that is passed, not thrown. Either way code() says what happened and
/// what() names the endpoint, the peer and what was wrong.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace netio {

enum class Errc {
  malformed_endpoint = 1,  ///< an endpoint string that cannot be parsed
  resolve_failed,          ///< a host name that does not resolve
  connection_refused,      ///< nobody listens at the address
  handshake_rejected,      ///< the peer is not a matching netio socket
  protocol_error,  ///< a peer broke the protocol: junk, oversized lengths, truncated pages, a message it may not send
  disconnected,    ///< the peer closed or vanished
  timeout,         ///< a blocking call ran out of time
  closed,          ///< the socket or context was closed
  message_too_large,     ///< larger than the peer accepts
  backend_error,         ///< the back-end (kernel, libfabric) reported a failure
  provider_unavailable,  ///< the scheme's back-end cannot run here (its library, or a provider matching the endpoint,
                         ///< is missing)
  would_block,           ///< a call that would have to wait, made on the event-loop thread
  invalid_option,  ///< misuse: an option, argument or call the API does not accept (a network, a key file, an empty
                   ///< Peer)
};

const std::error_category& error_category() noexcept;
std::error_code make_error_code(Errc e) noexcept;

class Error : public std::runtime_error {
 public:
  Error(std::error_code code, const std::string& what) : std::runtime_error(what), code_(code) {}
  Error(Errc code, const std::string& what) : std::runtime_error(what), code_(make_error_code(code)) {}

  const std::error_code& code() const noexcept { return code_; }

 private:
  std::error_code code_;
};

/// An Error for a failed system call: code is errno in the system category, and the
/// message ends with its text.
Error system_error(int errno_value, const std::string& what);

}  // namespace netio

/// @cond INTERNAL
template <>
struct std::is_error_code_enum<netio::Errc> : std::true_type {};
/// @endcond
