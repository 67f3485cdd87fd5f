// SPDX-License-Identifier: MIT
#include "checksum.hpp"

// Compiled into this file (no libxxhash.so at run time): inlined, XXH3 is as fast as the
// library's call on large buffers and faster on the 40-byte control frames.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace netio::tools {

std::uint64_t checksum64(std::span<const std::byte> bytes) noexcept { return XXH3_64bits(bytes.data(), bytes.size()); }

}  // namespace netio::tools
