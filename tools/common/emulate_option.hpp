// SPDX-License-Identifier: MIT
// --emulate SPEC: every tool's link shaping through the emulated network
// (netio/emulation.hpp), e.g. --emulate 'delay=lognormal:mean=50us,sigma=0.8;rate=10Gbps'.
// A bad spec is refused at parse time with the parser's message (which quotes the spec).
// Use: add_emulate_option(app, o.emulate); ... context_options.emulation = o.emulate;
#pragma once

#include "netio/emulation.hpp"

#include <CLI/CLI.hpp>

#include <optional>

namespace netio::tools {

CLI::Option* add_emulate_option(CLI::App& app, std::optional<netio::EmulationConfig>& target);

}  // namespace netio::tools
