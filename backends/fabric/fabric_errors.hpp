// SPDX-License-Identifier: MIT
// Turning libfabric return codes into netio errors.
#pragma once

#include "netio/error.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace netio::fabric {

// "No data available (-61)": fi_strerror of a (negative or positive) fabric errno, with the number.
std::string fi_error_text(int rc);

// The text of an error entry read from an event or completion queue: fi_strerror(error),
// plus what the provider says about `provider_errno` when it says something. `provider_text`
// is what fi_eq_strerror / fi_cq_strerror returned, possibly in a buffer of `capacity` bytes
// that the provider filled with strncpy (no terminating NUL when the text is that long), so
// at most `capacity` bytes are read. Nothing is added for provider_errno 0 or for texts that
// say nothing ("Success", "Unknown error N", a repeat of fi_strerror); unprintable bytes
// become '?'.
std::string queue_error_text(int error, int provider_errno, const char* provider_text, std::size_t capacity);

// The error for a failed libfabric call: "<context>: <call> failed: <fi_error_text>".
Error call_failed(std::string_view context, std::string_view call, int rc, Errc code = Errc::backend_error);

// Throws call_failed(...) when rc is negative; returns rc otherwise.
inline int check(int rc, std::string_view context, std::string_view call, Errc code = Errc::backend_error) {
  if (rc < 0) throw call_failed(context, call, rc, code);
  return rc;
}

}  // namespace netio::fabric
