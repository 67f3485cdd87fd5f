// Turning libfabric return codes into netio errors.
#pragma once

#include "netio/error.hpp"

#include <string>
#include <string_view>

namespace netio::fabric {

// "No data available (-61)": fi_strerror of a (negative or positive) fabric errno, with the number.
std::string fi_error_text(int rc);

// The error for a failed libfabric call: "<context>: <call> failed: <fi_error_text>".
Error call_failed(std::string_view context, std::string_view call, int rc, Errc code = Errc::backend_error);

// Throws call_failed(...) when rc is negative; returns rc otherwise.
inline int check(int rc, std::string_view context, std::string_view call, Errc code = Errc::backend_error) {
  if (rc < 0) throw call_failed(context, call, rc, code);
  return rc;
}

}  // namespace netio::fabric
