// SPDX-License-Identifier: MIT
// The convention for a bad argument or option (docs/guide/errors.md), checked: netio::Error
// with Errc::invalid_option, whose message names the option and the value.
#pragma once

#include "netio/error.hpp"

#include <catch2/catch.hpp>

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace netio::test {

// Runs `call`, which must throw netio::Error(Errc::invalid_option) with a message containing
// every one of `words`.
inline void check_invalid_option(const std::function<void()>& call, const std::vector<std::string>& words) {
  try {
    call();
    FAIL("no exception");
  } catch (const netio::Error& e) {
    INFO(e.what());
    CHECK(e.code() == netio::Errc::invalid_option);
    for (const auto& word : words) CHECK_THAT(e.what(), Catch::Contains(word));
  } catch (const std::exception& e) {
    FAIL("not a netio::Error: " << e.what());
  }
}

}  // namespace netio::test
