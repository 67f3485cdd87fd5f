// SPDX-License-Identifier: MIT
#include "tool_main.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace netio::tools {

int run_tool(std::string_view tool, const std::function<int()>& body) {
  try {
    return body();
  } catch (const netio::Error& e) {
    fmt::print(stderr, "{}: error: {}\n", tool, e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", tool, e.what());
  }
  return exit_failure;
}

void write_port_file(const std::string& path, std::uint16_t port) {
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) {
    throw std::runtime_error(fmt::format("cannot write port file '{}': {}", temporary, std::strerror(errno)));
  }
  fmt::print(file, "{}\n", port);
  if (std::fclose(file) != 0 || std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(fmt::format("cannot write port file '{}': {}", path, std::strerror(errno)));
  }
}

}  // namespace netio::tools
