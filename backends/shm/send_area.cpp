// SPDX-License-Identifier: MIT
#include "backends/shm/send_area.hpp"

#include "backends/shm/sealed_file.hpp"
#include "netio/error.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>

namespace netio::shm {

std::shared_ptr<SendArea> SendArea::create(std::size_t capacity) {
  posix::SocketFd fd = create_sealed_file("netio-send-area", "a send area", capacity);
  std::byte* base = map_shared(fd.get(), capacity);
  if (base == nullptr) throw system_error(errno, fmt::format("mapping a {}-byte send area failed", capacity));
  return std::shared_ptr<SendArea>(new SendArea(std::move(fd), base, capacity));
}

std::shared_ptr<SendArea> SendArea::attach(posix::SocketFd fd, std::size_t max_capacity, std::string& why) {
  std::string unsealed;
  const std::size_t size = sealed_file_size(fd.get(), unsealed);
  if (!unsealed.empty()) {
    why = "the send area: " + unsealed;
    return nullptr;
  }
  if (size == 0 || size > max_capacity) {
    why = fmt::format("the send area has {} bytes (1 to {} taken)", size, max_capacity);
    return nullptr;
  }
  std::byte* base = map_shared(fd.get(), size);
  if (base == nullptr) {
    why = fmt::format("mapping the {}-byte send area failed: {}", size, posix::errno_text(errno));
    return nullptr;
  }
  // The receiver needs the mapping only; the descriptor goes.
  return std::shared_ptr<SendArea>(new SendArea(posix::SocketFd(), base, size));
}

SendArea::~SendArea() { ::munmap(base_, capacity_); }

std::byte* SendArea::allocate(std::size_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  // First fit among what came back (a pool asks for buffers of one size), then fresh bytes.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const auto [offset, size] = *it;
    free_.erase(it);
    if (size > bytes) free_.emplace(offset + bytes, size - bytes);
    return base_ + offset;
  }
  if (capacity_ - used_ < bytes) return nullptr;
  std::byte* memory = base_ + used_;
  used_ += bytes;
  return memory;
}

void SendArea::deallocate(std::byte* memory, std::size_t bytes) noexcept {
  // The memory stays backed: a receiver may still hold a page lent from it, which must read
  // as it was sent (a freed page would read as zeros there).
  std::lock_guard lock(mutex_);
  auto [it, inserted] = free_.emplace(static_cast<std::size_t>(memory - base_), bytes);
  // Joined with its neighbours, so that a larger buffer fits where smaller ones were.
  if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    if (auto previous = std::prev(it); previous->first + previous->second == it->first) {
      previous->second += it->second;
      free_.erase(it);
    }
  }
}

std::optional<AreaReference> SendArea::reference_to(std::span<const std::byte> bytes) const noexcept {
  if (bytes.data() < base_ || bytes.data() > base_ + capacity_) return std::nullopt;
  const auto offset = static_cast<std::size_t>(bytes.data() - base_);
  if (bytes.size() > capacity_ - offset) return std::nullopt;
  return AreaReference{offset, bytes.size()};
}

std::optional<std::span<std::byte>> SendArea::resolve(const AreaReference& reference) const noexcept {
  if (reference.offset > capacity_ || reference.length > capacity_ - reference.offset) return std::nullopt;
  return std::span<std::byte>(base_ + reference.offset, reference.length);
}

}  // namespace netio::shm
