// SPDX-License-Identifier: MIT
#include "netio/version.hpp"

namespace netio {

std::string_view version() noexcept { return NETIO_VERSION_STRING; }

Version version_numbers() noexcept { return {NETIO_VERSION_MAJOR, NETIO_VERSION_MINOR, NETIO_VERSION_PATCH}; }

}  // namespace netio
