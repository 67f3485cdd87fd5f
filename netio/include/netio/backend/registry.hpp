// SPDX-License-Identifier: MIT
/// @file
/// @ingroup backend
/// Back-ends by scheme: the process-wide table from an endpoint's scheme ("tcp", "fabric")
/// to the factory that makes that back-end. A Context asks it for the back-end of each
/// scheme it meets, once, on its loop thread; the core names no back-end of its own.
///
/// The built-in back-ends are entered on the registry's first use (not by static
/// initialisers, which a static library drops); a back-end this netio was built without
/// (fabric without libfabric) is entered as unavailable, with the reason, and is not listed.
///
/// Thread-safety: every function may be called from any thread. A Context that already made
/// the back-end of a scheme keeps it: registering a new factory affects later lookups only.
#pragma once

#include "netio/backend/backend.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace netio {

class EventLoop;

/// Makes a back-end bound to `loop`. Called on the loop thread; may throw netio::Error when
/// the back-end cannot start (e.g. no libfabric provider).
using BackendFactory = std::function<std::unique_ptr<Backend>(EventLoop& loop)>;

/// How endpoints of a scheme are written, for Endpoint::parse() and its messages.
struct EndpointForm {
  /// What the part before ":PORT" names, in messages (shm://NAME:PORT: "name").
  std::string host_field = "host";
  /// The query keys the back-end takes (Endpoint::options); any other key is malformed.
  std::vector<std::string> options;
};

/// Enters (or replaces) the factory for `scheme`; from then on Endpoint::parse accepts
/// "SCHEME://HOST:PORT" and sockets on such endpoints use this back-end. A scheme is letters,
/// digits, '+', '-' and '.', starting with a letter (as in a URI). Throws
/// Error(Errc::invalid_option) naming the scheme for a malformed scheme or an empty factory.
void register_backend(std::string scheme, BackendFactory factory, EndpointForm form = {});

/// True when `scheme` is in the registry: usable, or built in but unavailable in this build
/// (fabric without libfabric; a socket on it fails with the reason).
bool backend_registered(std::string_view scheme);

/// Makes the back-end for `scheme`, on the caller's thread (call it on `loop`'s thread).
/// Throws netio::Error naming `what_for` (e.g. the endpoint) when the scheme has no usable
/// back-end: the reason it is unavailable, or the list of registered schemes.
std::unique_ptr<Backend> make_registered_backend(std::string_view scheme, EventLoop& loop, std::string_view what_for);

/// How endpoints of `scheme` are written (the default form for a scheme not registered).
EndpointForm endpoint_form(std::string_view scheme);

/// The schemes with a usable back-end, sorted.
std::vector<std::string> registered_backend_schemes();

}  // namespace netio
