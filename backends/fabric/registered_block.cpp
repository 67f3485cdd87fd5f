// SPDX-License-Identifier: MIT
#include "backends/fabric/registered_block.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace netio::fabric {
namespace {
constexpr std::size_t block_alignment = 4096;
}

RegisteredBlock::RegisteredBlock(std::shared_ptr<Domain> domain, std::size_t size) : domain_(std::move(domain)) {
  const std::size_t capacity = (size + block_alignment - 1) / block_alignment * block_alignment;
  buffer_.data = static_cast<std::byte*>(std::aligned_alloc(block_alignment, capacity));
  if (buffer_.data == nullptr) throw std::bad_alloc();
  std::memset(buffer_.data, 0, capacity);
  buffer_.capacity = capacity;
  try {
    domain_->registrar().register_buffer(buffer_);
  } catch (...) {
    std::free(buffer_.data);
    throw;
  }
}

RegisteredBlock::~RegisteredBlock() {
  domain_->registrar().deregister_buffer(buffer_);
  std::free(buffer_.data);
}

}  // namespace netio::fabric
