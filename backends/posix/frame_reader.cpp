// SPDX-License-Identifier: MIT
#include "backends/posix/frame_reader.hpp"

#include "backends/posix/socket_fd.hpp"
#include "backends/posix/wire.hpp"
#include "netio/internal/little_endian.hpp"

#include <fmt/format.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

namespace netio::posix {
namespace {
// What an idle connection holds is the staging buffer and, once its first frame (the
// introduction) came, one small frame buffer: 64 KiB together, the budget's charge for an
// idle connection (ReceiveConnections). Frame buffers grow to the frames they take.
constexpr std::size_t staging_size = 60 * 1024;
constexpr std::size_t initial_frame_buffer = 4 * 1024;
constexpr int max_reads_per_wakeup = 16;  // then let other connections have the loop
}  // namespace

// The buffers a reader lends out. Shared with every ReceivedBuffer, so it outlives the
// reader. give_back() may run on any thread; it calls the waker only when the reader
// stalled for lack of buffers (so a returned buffer costs no wake-up in the common case).
// A low-latency message or a reply goes back as its callback returns, and the next frame
// takes it from the pool's spare (BufferPool): one atomic exchange on each side.
class ReceiveBufferPool final : public ReceiveBufferOwner {
 public:
  ReceiveBufferPool(std::size_t credits, std::size_t initial_size) : pool_(credits, initial_size) {}

  BufferPool& pool() noexcept { return pool_; }

  void set_waker(std::function<void()> waker) {
    std::lock_guard lock(mutex_);
    waker_ = std::move(waker);
  }
  // The reader found no free buffer: ask to be woken by the next give_back().
  void want_wakeup() noexcept { waiting_.store(true, std::memory_order_seq_cst); }
  void cancel_wakeup() noexcept { waiting_.store(false, std::memory_order_relaxed); }

  void give_back(Buffer* buffer) noexcept override {
    pool_.release(buffer);
    // The load spares the common case a locked exchange. It cannot miss a reader that
    // stalled: the reader sets the flag before it tries the pool once more, so either that
    // try finds this buffer or this load sees the flag (the pool's spare is sequentially
    // consistent; its mutex orders the rest).
    if (waiting_.load(std::memory_order_seq_cst) && waiting_.exchange(false, std::memory_order_seq_cst)) {
      std::lock_guard lock(mutex_);
      if (waker_) waker_();
    }
  }

 private:
  BufferPool pool_;
  std::atomic<bool> waiting_{false};
  std::mutex mutex_;
  std::function<void()> waker_;  // guarded by mutex_
};

FrameReader::FrameReader(EventLoop& loop, std::size_t max_frame, std::size_t credits, std::string peer,
                         std::string link)
    : loop_(loop),
      max_frame_(max_frame),
      peer_(std::move(peer)),
      link_(std::move(link)),
      pool_(std::make_shared<ReceiveBufferPool>(std::max<std::size_t>(credits, 1),
                                                std::min(max_frame, initial_frame_buffer))),
      staging_(staging_size) {}

FrameReader::~FrameReader() { close(); }

std::size_t FrameReader::bytes_held() const noexcept { return staging_.capacity() + pool_->pool().bytes_allocated(); }

void FrameReader::start(int fd, Callbacks callbacks) {
  fd_ = fd;
  callbacks_ = std::move(callbacks);
  // Wake-ups from other threads travel as a posted task that checks the reader still lives.
  pool_->set_waker([this, alive = std::weak_ptr<int>(alive_)] {
    loop_.post([this, alive] {
      if (!alive.expired()) resume();  // the reader may have gone while the task waited
    });
  });
}

void FrameReader::on_readable() {
  for (int i = 0; i < max_reads_per_wakeup && !closed_ && !stalled_; ++i) {
    const Step step = read_once();
    if (step == Step::would_block) set_low_watermark(true);
    if (step != Step::progress) return;
  }
  // Out of reads with bytes perhaps left in the kernel: poll must report what is there.
  if (!closed_ && !stalled_) set_low_watermark(false);
}

void FrameReader::set_low_watermark(bool may_raise) {
  const std::size_t rest = current_ != nullptr ? expected_ - current_->size : 0;
  // Smaller rests take a segment or two: a wake-up each costs less than two system calls.
  const std::size_t wanted = rest >= staging_size ? std::min<std::size_t>(rest, INT_MAX) : 1;
  if (wanted == low_watermark_ || (wanted > low_watermark_ && !may_raise)) return;
  const int value = static_cast<int>(wanted);  // the kernel caps it (half of tcp_rmem's maximum)
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &value, sizeof value) != 0) {
    // A mark left too high would hide bytes that are there: not a connection to keep.
    fail(Errc::disconnected, fmt::format("connection {}: setting SO_RCVLOWAT failed: {}", link_, errno_text(errno)));
    return;
  }
  low_watermark_ = wanted;
}

FrameReader::Step FrameReader::read_once() {
  std::byte* target;
  std::size_t room;
  const bool direct = current_ != nullptr && staged_begin_ == staged_end_ && expected_ - current_->size >= staging_size;
  if (direct) {
    // The rest of a large frame: straight into its buffer, no staging copy.
    target = current_->data + current_->size;
    room = expected_ - current_->size;
  } else {
    if (staged_begin_ == staged_end_) staged_begin_ = staged_end_ = 0;
    if (staged_end_ == staging_.size()) {  // only a partial header can be left: move it to the front
      std::memmove(staging_.data(), staging_.data() + staged_begin_, staged_end_ - staged_begin_);
      staged_end_ -= staged_begin_;
      staged_begin_ = 0;
    }
    target = staging_.data() + staged_end_;
    room = staging_.size() - staged_end_;
  }
  // Bytes for staging are peeked, handed on, and only then taken from the kernel (below):
  // Linux acknowledges a small pushed segment in the recv() that drains it, and on a
  // connection that carries data one way only that ACK (its transmission and, on loopback,
  // its reception) would delay every small message's delivery by some microseconds. On a
  // connection that carries traffic both ways the ACK rides on that traffic: one recv().
  const bool peek = !direct && peek_;
  const ssize_t n = ::recv(fd_, target, room, peek ? MSG_PEEK : 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return Step::would_block;
    failure_errno_ = errno;
    fail(Errc::disconnected, fmt::format("connection {} lost: {}", link_, errno_text(errno)));
    return Step::done;
  }
  if (n == 0) {
    const bool mid_frame = current_ != nullptr || have_header_ || staged_begin_ != staged_end_;
    fail(Errc::disconnected,
         fmt::format("{} closed the connection{}", peer_, mid_frame ? " in the middle of a message" : ""));
    return Step::done;
  }
  // A recv() that filled less than its room took all the kernel had: asking again would only
  // return EAGAIN, a system call per wake-up (a sleeping round trip's two sides pay one each).
  const bool drained = static_cast<std::size_t>(n) < room;
  if (direct) {
    current_->size += static_cast<std::size_t>(n);
    if (current_->size == expected_) deliver();
    return closed_ ? Step::done : (drained ? Step::would_block : Step::progress);
  }
  staged_end_ += static_cast<std::size_t>(n);
  const bool consumed = consume_staged();
  if (peek && !closed_ && !discard_peeked(target, static_cast<std::size_t>(n)))
    return Step::done;  // now the ACK may go
  if (!consumed) return Step::stalled;
  return drained ? Step::would_block : Step::progress;
}

bool FrameReader::discard_peeked(std::byte* peeked, std::size_t bytes) {
  ssize_t n;
  do {
    // TCP: drops the bytes, copies nothing. The buffer they were peeked into is passed all
    // the same, because sanitizers' recv() interceptors record a write to it (at address 0
    // for a null one, which two readers on two loop threads would then "race" on).
    n = ::recv(fd_, peeked, bytes, MSG_TRUNC);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(bytes)) return true;
  if (n < 0) failure_errno_ = errno;
  fail(Errc::disconnected,
       fmt::format("connection {} lost: {}", link_,
                   n < 0 ? errno_text(errno) : fmt::format("{} of {} bytes read were gone", n, bytes)));
  return false;
}

bool FrameReader::consume_staged() {
  while (!closed_) {
    const std::size_t staged = staged_end_ - staged_begin_;
    if (current_ == nullptr) {
      if (!have_header_) {
        if (staged < frame_header_size) return true;
        expected_ = detail::load_le<std::uint64_t>(staging_.data() + staged_begin_);
        staged_begin_ += frame_header_size;
        have_header_ = true;
        if (expected_ > max_frame_) {
          fail(Errc::protocol_error,
               fmt::format("{} sent a {}-byte buffer on the connection {}, more than the {} bytes agreed", peer_,
                           expected_, link_, max_frame_));
          return false;
        }
      }
      current_ = pool_->pool().try_acquire();
      if (current_ == nullptr) {
        // Every buffer is lent out: stop reading until one comes back. Asking for the
        // wake-up before the second try closes the race with a give_back() in between.
        pool_->want_wakeup();
        current_ = pool_->pool().try_acquire();
        if (current_ == nullptr) {
          stalled_ = true;
          if (callbacks_.on_stall_changed) callbacks_.on_stall_changed(true);
          return false;
        }
        pool_->cancel_wakeup();
      }
      pool_->pool().reserve(current_, expected_);
      current_->size = 0;
    }
    const std::size_t take = std::min(staged_end_ - staged_begin_, expected_ - current_->size);
    if (take != 0) std::memcpy(current_->data + current_->size, staging_.data() + staged_begin_, take);
    current_->size += take;
    staged_begin_ += take;
    if (current_->size < expected_) return true;  // needs more bytes from the socket
    deliver();
  }
  return false;
}

void FrameReader::deliver() {
  Buffer* buffer = std::exchange(current_, nullptr);
  have_header_ = false;
  ++frames_delivered_;
  if (callbacks_.on_frame)
    callbacks_.on_frame(ReceivedBuffer(buffer, pool_));
  else
    pool_->give_back(buffer);
}

void FrameReader::resume() {
  if (closed_ || !stalled_) return;
  stalled_ = false;
  if (callbacks_.on_stall_changed) callbacks_.on_stall_changed(false);
  if (consume_staged()) on_readable();
}

void FrameReader::fail(Errc code, const std::string& why) {
  auto callback = callbacks_.on_failed;
  close();
  if (callback) callback(code, why);
}

void FrameReader::close() noexcept {
  if (closed_) return;
  closed_ = true;
  pool_->set_waker(nullptr);
  alive_.reset();
  if (current_ != nullptr) pool_->pool().release(std::exchange(current_, nullptr));
}

}  // namespace netio::posix
