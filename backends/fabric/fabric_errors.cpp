#include "backends/fabric/fabric_errors.hpp"

#include <rdma/fi_errno.h>

#include <fmt/format.h>

#include <cstdlib>

namespace netio::fabric {

std::string fi_error_text(int rc) { return fmt::format("{} ({})", ::fi_strerror(std::abs(rc)), rc); }

Error call_failed(std::string_view context, std::string_view call, int rc, Errc code) {
  return Error(code, fmt::format("{}: {} failed: {}", context, call, fi_error_text(rc)));
}

}  // namespace netio::fabric
