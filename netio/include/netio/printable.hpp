// SPDX-License-Identifier: MIT
/// @file
/// Text a peer chose (its name, its declared endpoint), made safe to print: what netio and
/// its tools pass through before writing a peer's identity to a log or a terminal, so that a
/// peer cannot start a line of its own, move the cursor or recolour the terminal.
///
/// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace netio {

/// Whether `text` is valid UTF-8 without control characters (C0, DEL, C1): what a peer's
/// name must be (netio::Identity).
bool is_printable_utf8(std::string_view text) noexcept;

/// `text` with every control character (C0, DEL, C1), every byte of invalid UTF-8 and the
/// backslash escaped as `\xNN` (`\\` for the backslash); printable UTF-8 is kept as it is.
/// Text that is_printable_utf8() and has no backslash comes back unchanged.
std::string printable(std::string_view text);

}  // namespace netio
