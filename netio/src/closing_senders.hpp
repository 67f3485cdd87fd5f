// SPDX-License-Identifier: MIT
// Send connections closing asynchronously (a send socket's close(on_closed), or its
// destructor on the event-loop thread) belong to their Context's ClosingSenders until their
// close ends: the user's socket is gone by then, and Context::stop() must end what is left
// while the back-ends those connections use still exist.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>

namespace netio::detail {

class BufferSender;

class ClosingSenders {
 public:
  // Keeps `sender` alive until release() (or finish()).
  void keep(std::shared_ptr<BufferSender> sender);
  // Gives up the reference taken by keep(): null if there was none. The caller destroys it
  // where that is safe (never inside one of the back-end socket's callbacks).
  std::shared_ptr<BufferSender> release(const BufferSender* sender);
  // Ends every close still in progress, reporting Errc::closed for what was not sent, and
  // destroys those connections. For Context::stop(), once the loop has stopped.
  void finish() noexcept;

 private:
  std::mutex mutex_;
  std::map<const BufferSender*, std::shared_ptr<BufferSender>> closing_;
};

}  // namespace netio::detail
