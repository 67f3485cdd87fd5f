// SPDX-License-Identifier: MIT
// What every tool's main() shares: turning exceptions into a clear message and an exit
// code, and the --port-file that lets scripts find a port picked by the system.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace netio::tools {

// Exit codes of the tools.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;              // connection failed, timed out, peer vanished...
inline constexpr int exit_usage = 2;                // bad arguments: every parse or validation error
inline constexpr int exit_verification_failed = 3;  // --verify found lost, duplicated or corrupt messages

// Runs `body` and returns its exit code; an escaping netio::Error or other exception is
// printed as "<tool>: error: <what>" on stderr and gives exit_failure.
int run_tool(std::string_view tool, const std::function<int()>& body);

// Writes "<port>\n" to `path` atomically (a temporary file renamed into place), so a
// script polling for the file never reads half of it. Throws std::runtime_error.
void write_port_file(const std::string& path, std::uint16_t port);

}  // namespace netio::tools
