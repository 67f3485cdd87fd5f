// SPDX-License-Identifier: MIT
// A small block of registered memory that a socket keeps for its own messages (credit
// messages, and the receives that take them). Freed after the socket's endpoint is closed.
#pragma once

#include "backends/fabric/fabric_domain.hpp"
#include "netio/backend/buffer.hpp"

#include <cstddef>
#include <memory>

namespace netio::fabric {

class RegisteredBlock {
 public:
  RegisteredBlock(std::shared_ptr<Domain> domain, std::size_t size);
  ~RegisteredBlock();
  RegisteredBlock(const RegisteredBlock&) = delete;
  RegisteredBlock& operator=(const RegisteredBlock&) = delete;

  std::byte* data(std::size_t offset = 0) noexcept { return buffer_.data + offset; }
  void* desc() const noexcept { return buffer_.desc; }

 private:
  std::shared_ptr<Domain> domain_;
  Buffer buffer_;
};

}  // namespace netio::fabric
