// SPDX-License-Identifier: MIT
// What every fuzz target shares. A decoder given hostile bytes may refuse them with
// netio::Error (that is its contract); anything else — another exception, a crash, a
// sanitizer report, a round trip that changes the value — is a finding. FUZZ_CHECK aborts
// (libFuzzer then saves the input as crash-*), in release builds too.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                                 \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)
