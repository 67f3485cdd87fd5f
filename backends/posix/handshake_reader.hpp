// SPDX-License-Identifier: MIT
// Reads one small frame (a hello or a reply) from a non-blocking socket, exactly: not a
// byte beyond the frame is consumed, so what follows stays in the socket for the next reader.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace netio::posix {

class HandshakeReader {
 public:
  enum class Status { need_more, complete, closed, failed };

  // Reads what is available. On `failed`, error() says why (a system error or junk).
  Status read_from(int fd);
  std::span<const std::byte> payload() const noexcept;
  const std::string& error() const noexcept { return error_; }

 private:
  std::vector<std::byte> bytes_;
  std::size_t expected_ = 0;  // total frame size once the header is in
  std::string error_;
};

}  // namespace netio::posix
