// SPDX-License-Identifier: MIT
// The receive buffers of one fabric receive socket, and where ReceivedBuffers go back to.
//
// Each buffer is mapped (anonymous memory: its pages are backed only once written) and
// registered with the socket's domain. On a provider that does not pin registered memory
// (no FI_MR_LOCAL: tcp, sockets) a posted buffer therefore holds only the pages messages
// have filled: bytes_filled() counts them, for the receive budget. While the
// socket is open, a buffer given back (on any thread) is queued and the socket's progress
// driver is kicked; the loop thread then re-posts it and returns a credit to the sender.
// Shared ownership keeps this alive as long as any ReceivedBuffer is: buffers that come
// back after the socket closed are freed (deregistered) on the spot, on whatever thread
// gives them back.
#pragma once

#include "backends/fabric/fabric_domain.hpp"
#include "backends/fabric/operation_context.hpp"
#include "backends/fabric/progress_driver.hpp"
#include "netio/backend/backend.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace netio::fabric {

class ReceiveBuffers final : public ReceiveBufferOwner {
 public:
  // Allocates and registers `count` buffers that each take a message of up to
  // `buffer_size` bytes. Throws netio::Error (registration) or std::bad_alloc.
  ReceiveBuffers(std::shared_ptr<Domain> domain, std::size_t count, std::size_t buffer_size);
  ~ReceiveBuffers() override;
  ReceiveBuffers(const ReceiveBuffers&) = delete;
  ReceiveBuffers& operator=(const ReceiveBuffers&) = delete;

  std::size_t count() const noexcept { return slots_.size(); }
  std::size_t buffer_size() const noexcept { return buffer_size_; }
  Buffer& buffer(std::size_t index) noexcept { return *slots_[index]; }
  OperationContext& operation(std::size_t index) noexcept { return slots_[index]->operation; }
  // `buffer` must be one of ours.
  static OperationContext& operation_of(Buffer* buffer) noexcept { return static_cast<Slot*>(buffer)->operation; }

  // Loop thread: a message of `length` bytes landed in `buffer` (one of ours).
  void note_filled(Buffer* buffer, std::size_t length) noexcept;
  // Loop thread: the pages of all buffers that messages have written so far (each buffer's
  // largest message, rounded up to pages): what they hold where posting pins nothing.
  std::size_t bytes_filled() const noexcept { return bytes_filled_; }

  // Loop thread: kick `driver` whenever a buffer comes back.
  void attach(std::shared_ptr<ProgressDriver> driver);
  // Loop thread: the buffer goes to the user (it must come back through give_back).
  void lend(Buffer* buffer) noexcept;
  // Any thread.
  void give_back(Buffer* buffer) noexcept override;
  // Loop thread: moves the buffers given back since the last call into `out`.
  void take_returned(std::vector<Buffer*>& out);
  // Loop thread, after the endpoint's fids are closed: frees every buffer that is not lent
  // out; the others are freed when they come back.
  void detach() noexcept;

 private:
  struct Slot : Buffer {
    OperationContext operation;
    bool lent = false;
    bool freed = false;
    std::size_t filled = 0;  // pages written so far, in bytes; loop thread
  };
  void free_slot(Slot& slot) noexcept;  // with mutex_ held (or no other thread around)

  std::shared_ptr<Domain> domain_;  // keeps the registrar alive for late deregistration
  std::size_t buffer_size_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::size_t bytes_filled_ = 0;  // loop thread
  std::mutex mutex_;
  std::shared_ptr<ProgressDriver> driver_;  // guarded by mutex_; empty once detached
  std::vector<Buffer*> returned_;           // guarded by mutex_
  bool detached_ = false;                   // guarded by mutex_
};

}  // namespace netio::fabric
