// SPDX-License-Identifier: MIT
// The memory a shm:// send socket's own pool takes its buffers from
// (LowLevelSendSocket::send_memory()), so that a high-throughput page is written once, by
// the caller filling it, and never copied again: a sealed memory file the sender maps and
// passes to its receiver once, before the first reference to it (ShmConnection). A buffer
// from it then travels through the data ring as an AreaReference (offset, length) and is
// parsed where the sender wrote it; it completes when the receiver frees that ring entry.
//
// The file is as large as `capacity`, but memory is backed only where buffers are written:
// a pool's worth at most. A pool larger than the area gets the rest from the heap (copied).
//
// Thread-safety: allocate()/deallocate() from any thread; the rest is immutable. Lifetime:
// held by the send socket, the connection and every buffer lent from it at the receiver.
#pragma once

#include "backends/posix/socket_fd.hpp"
#include "netio/backend/buffer.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

namespace netio::shm {

// What a ring entry of EntryKind::area_reference carries (little-endian on the node), then
// the returned flag (reference_payload_size in all): 0 when pushed, set by the receiver when
// the page comes back (returned_flag()), so that the sender has its page again before the
// ring, which frees in order, gets that far.
struct AreaReference {
  std::uint64_t offset;
  std::uint64_t length;
};
constexpr std::size_t returned_flag_offset = sizeof(AreaReference);  // in the entry's payload
constexpr std::size_t reference_payload_size = returned_flag_offset + sizeof(std::uint64_t);

// The returned flag at `at` (8-aligned, in a mapping both sides share).
inline std::atomic_ref<std::uint64_t> returned_flag(std::byte* at) noexcept {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(at));
}

// What a sender's area is at most (virtual: memory is backed as written), and what a
// receiver maps at most.
constexpr std::size_t send_area_capacity = std::size_t{256} << 20;
constexpr std::size_t max_send_area_capacity = std::size_t{1} << 30;

class SendArea final : public BufferMemory {
 public:
  // A fresh area at the sender. Throws Error.
  static std::shared_ptr<SendArea> create(std::size_t capacity = send_area_capacity);
  // Maps the area a sender passed: sealed, at most `max_capacity` bytes. nullptr and `why`
  // otherwise.
  static std::shared_ptr<SendArea> attach(posix::SocketFd fd, std::size_t max_capacity, std::string& why);
  ~SendArea() override;
  SendArea(const SendArea&) = delete;
  SendArea& operator=(const SendArea&) = delete;

  std::byte* allocate(std::size_t bytes) noexcept override;
  void deallocate(std::byte* memory, std::size_t bytes) noexcept override;

  // Where `bytes` lie in the area; nullopt when not wholly inside.
  std::optional<AreaReference> reference_to(std::span<const std::byte> bytes) const noexcept;
  // The bytes a reference names; nullopt when they are not wholly inside (a corrupt peer).
  std::optional<std::span<std::byte>> resolve(const AreaReference& reference) const noexcept;

  int fd() const noexcept { return fd_.get(); }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  SendArea(posix::SocketFd fd, std::byte* base, std::size_t capacity) noexcept
      : fd_(std::move(fd)), base_(base), capacity_(capacity) {}

  posix::SocketFd fd_;
  std::byte* base_;
  std::size_t capacity_;
  std::mutex mutex_;
  std::size_t used_ = 0;                     // bytes handed out from the start, ever
  std::map<std::size_t, std::size_t> free_;  // offset -> bytes, given back below used_
};

}  // namespace netio::shm
