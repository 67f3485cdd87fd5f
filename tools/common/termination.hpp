// SPDX-License-Identifier: MIT
// Ctrl-C and SIGTERM for the tools: the first signal asks the tool to stop cleanly (report
// what it has, close its sockets); a second one kills it the default way, for a tool that
// is stuck.
//
// The handler only sets a flag: the tools poll stop_requested() in their loops and bound
// every blocking wait (100 ms slices), since the signal may be delivered to any thread.
#pragma once

namespace netio::tools {

void install_termination_handlers();
bool stop_requested() noexcept;
// The signal that asked to stop (SIGINT, SIGTERM), or 0.
int stop_signal() noexcept;

}  // namespace netio::tools
