// SPDX-License-Identifier: MIT
#include "build_facts.hpp"

#include "netio_build_facts.h"  // generated: tools/common/build_facts.h.in

#include "netio/version.hpp"

#include <fmt/format.h>

namespace netio::tools {

std::string version_text(std::string_view tool) {
  return fmt::format("{} {}\ncommit {} ({} build)\nback-ends: {}\nfeatures: {}", tool, netio::version(),
                     NETIO_BUILD_COMMIT, NETIO_BUILD_TYPE, NETIO_BUILD_BACKENDS, NETIO_BUILD_FEATURES);
}

}  // namespace netio::tools
