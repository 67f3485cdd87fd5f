// Send connections closing asynchronously (a send socket's close(on_closed), or its
// destructor on the event-loop thread) belong here until their close ends: the user's
// socket is gone by then, and Context::stop() must end what is left while the back-ends
// those connections use still exist.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <memory>

namespace netio {
class EventLoop;
}

namespace netio::detail {

class BufferSender;

// Keeps `sender` alive until release_closing() (or finish_closing()).
void keep_closing(EventLoop& loop, std::shared_ptr<BufferSender> sender);
// Gives up the reference taken by keep_closing(): null if there was none. The caller
// destroys it where that is safe (never inside one of the back-end socket's callbacks).
std::shared_ptr<BufferSender> release_closing(EventLoop& loop, const BufferSender* sender);
// Ends every close still in progress on `loop`, reporting Errc::closed for what was not
// sent, and destroys those connections. For Context::stop(), once the loop has stopped.
void finish_closing(EventLoop& loop) noexcept;

}  // namespace netio::detail
