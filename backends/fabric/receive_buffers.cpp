// SPDX-License-Identifier: MIT
#include "backends/fabric/receive_buffers.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace netio::fabric {
namespace {

constexpr std::size_t page_size = 4096;

std::size_t round_to_pages(std::size_t bytes) {
  return (std::max<std::size_t>(bytes, 1) + page_size - 1) / page_size * page_size;
}

// Anonymous memory, page-aligned, backed page by page as it is first written (malloc could
// hand out pages that are already resident).
std::byte* map_pages(std::size_t capacity) {
  void* memory = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  return static_cast<std::byte*>(memory);
}

}  // namespace

ReceiveBuffers::ReceiveBuffers(std::shared_ptr<Domain> domain, std::size_t count, std::size_t buffer_size)
    : domain_(std::move(domain)), buffer_size_(buffer_size) {
  slots_.reserve(count);
  returned_.reserve(count);  // give_back() must not allocate
  try {
    for (std::size_t i = 0; i < count; ++i) {
      auto slot = std::make_unique<Slot>();
      const std::size_t capacity = round_to_pages(buffer_size);
      slot->data = map_pages(capacity);
      slot->capacity = capacity;
      slots_.push_back(std::move(slot));
      domain_->registrar().register_buffer(*slots_.back());
      auto& operation = slots_.back()->operation;
      operation.kind = OperationContext::Kind::data_receive;
      operation.index = static_cast<std::uint32_t>(i);
      operation.buffer = slots_.back().get();
    }
  } catch (...) {
    for (auto& slot : slots_) free_slot(*slot);
    throw;
  }
}

ReceiveBuffers::~ReceiveBuffers() {
  for (auto& slot : slots_) free_slot(*slot);
}

void ReceiveBuffers::note_filled(Buffer* buffer, std::size_t length) noexcept {
  auto& slot = *static_cast<Slot*>(buffer);
  if (length <= slot.filled) return;  // the usual case once streaming: nothing new touched
  const std::size_t filled = std::min(round_to_pages(length), slot.capacity);
  bytes_filled_ += filled - slot.filled;
  slot.filled = filled;
}

void ReceiveBuffers::attach(std::shared_ptr<ProgressDriver> driver) {
  std::lock_guard lock(mutex_);
  driver_ = std::move(driver);
}

void ReceiveBuffers::lend(Buffer* buffer) noexcept {
  std::lock_guard lock(mutex_);
  static_cast<Slot*>(buffer)->lent = true;
}

void ReceiveBuffers::give_back(Buffer* buffer) noexcept {
  auto& slot = *static_cast<Slot*>(buffer);
  std::shared_ptr<ProgressDriver> driver;
  {
    std::lock_guard lock(mutex_);
    slot.lent = false;
    if (detached_) {
      free_slot(slot);
      return;
    }
    returned_.push_back(buffer);
    driver = driver_;  // a reference of our own: detach() cannot drop it while we use it
  }
  // Outside the lock: on a stopped loop kick() runs the progress here, under the loop's serial
  // lock, which a stopped loop's run_sync() (detach() among its tasks) takes before this one.
  if (driver) driver->kick();
}

void ReceiveBuffers::take_returned(std::vector<Buffer*>& out) {
  out.clear();
  std::lock_guard lock(mutex_);
  out.swap(returned_);
}

void ReceiveBuffers::detach() noexcept {
  std::lock_guard lock(mutex_);
  detached_ = true;
  driver_.reset();
  returned_.clear();
  for (auto& slot : slots_) {
    if (!slot->lent) free_slot(*slot);
  }
}

void ReceiveBuffers::free_slot(Slot& slot) noexcept {
  if (slot.freed) return;
  slot.freed = true;
  domain_->registrar().deregister_buffer(slot);
  if (slot.data != nullptr) ::munmap(slot.data, slot.capacity);
  slot.data = nullptr;
  slot.capacity = 0;
  slot.size = 0;
}

}  // namespace netio::fabric
