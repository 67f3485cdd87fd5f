// SPDX-License-Identifier: MIT
// Whether this build runs under a sanitizer. Long randomised and churn tests run fewer rounds
// there: a sanitizer reports a fault on the path's first runs, and the plain build runs every
// round (CI runs the suite once plain, once under each sanitizer).
#pragma once

namespace netio::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif
#else
inline constexpr bool sanitized = false;
#endif

}  // namespace netio::test
