// SPDX-License-Identifier: MIT
// What the tools' --version says about the build they come from (like `iperf3 -v`): the git
// commit, the build type, the back-ends built in and the optional features. Taken when CMake
// configures the build (tools/common/build_facts.h.in), in this one place for every tool.
#pragma once

#include <string>
#include <string_view>

namespace netio::tools {

// Several lines, the first "<tool> <version>", e.g.
//   netio_recv 0.1.0
//   commit 84f3c5c (RelWithDebInfo build)
//   back-ends: tcp shm fabric emulated
//   features: libsodium (pre-shared keys)
std::string version_text(std::string_view tool);

}  // namespace netio::tools
