// SPDX-License-Identifier: MIT
// ContextOptions for the shared integration suites. With NETIO_TEST_WRAP_BACKENDS=1 in the
// environment, every back-end is wrapped in a CountingBackend (ContextOptions::wrap_backend):
// the suites then run unchanged through a decorator (CTest's *.wrapped_backends entry).
// With NETIO_TEST_EMULATE=SPEC, every context runs on that emulated network
// (netio/emulation.hpp): the suites must pass unchanged through delays and rates too (CTest's
// *.emulated_backends entry).
#pragma once

#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "support/counting_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>

namespace netio::test {

inline bool wrapping_backends() {
  const char* value = std::getenv("NETIO_TEST_WRAP_BACKENDS");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// What every wrapped back-end of this process counted.
inline const std::shared_ptr<BackendCallCounts>& wrapped_backend_counts() {
  static const auto counts = std::make_shared<BackendCallCounts>();
  return counts;
}

inline void wrap_backends_in_counters(ContextOptions& options, std::shared_ptr<BackendCallCounts> counts) {
  options.wrap_backend = [counts = std::move(counts)](std::string_view, std::unique_ptr<Backend> inner, EventLoop&) {
    return std::make_unique<CountingBackend>(std::move(inner), counts);
  };
}

// Whether the suites run on the emulated network of NETIO_TEST_EMULATE.
inline bool emulating() { return std::getenv("NETIO_TEST_EMULATE") != nullptr; }

// `options`, plus the counting decorator when NETIO_TEST_WRAP_BACKENDS=1, plus the emulated
// network of NETIO_TEST_EMULATE when set.
inline ContextOptions context_options(ContextOptions options = {}) {
  if (wrapping_backends()) wrap_backends_in_counters(options, wrapped_backend_counts());
  if (const char* spec = std::getenv("NETIO_TEST_EMULATE"); spec != nullptr && !options.emulation) {
    options.emulation = parse_emulation_spec(spec);
  }
  return options;
}

}  // namespace netio::test
