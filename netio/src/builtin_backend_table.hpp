// SPDX-License-Identifier: MIT
// How the registry is filled with the back-ends built into this netio: the core declares
// it, backends/builtin_backends.cpp defines it, and the registry calls it on first use.
#pragma once

#include "netio/backend/registry.hpp"

#include <string>

namespace netio {
namespace detail {

// The registry while it is being made (thread-safe through the function-local static it
// lives in): register_builtin_backends() must add through this, never through
// register_backend(), which would wait for the registry to finish being made.
class BuiltinBackendTable {
 public:
  virtual ~BuiltinBackendTable() = default;
  virtual void add(std::string scheme, BackendFactory factory, EndpointForm form = {}) = 0;
  // A scheme this build knows but cannot serve; using it throws Error(backend_error, reason).
  virtual void add_unavailable(std::string scheme, std::string reason, EndpointForm form = {}) = 0;
};

// Defined with the back-ends (backends/builtin_backends.cpp).
void register_builtin_backends(BuiltinBackendTable& table);

}  // namespace detail
}  // namespace netio
