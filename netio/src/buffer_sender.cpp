#include "buffer_sender.hpp"

#include "introduction.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>

namespace netio::detail {

BufferSender::BufferSender(Context& context, const Endpoint& remote, const Hello& hello, const Identity& identity,
                           ReplyOptions replies, std::size_t buffer_count, std::size_t buffer_size,
                           StatsCounters& stats)
    : loop_(context.loop()),
      remote_(remote),
      stats_(stats),
      replies_(std::make_shared<ReplyReceiver>(std::move(replies), remote.to_string())) {
  const auto introduction = encode_introduction(identity);  // throws before anything is set up
  Backend& backend = context.backend(remote);
  submitted_.reserve(buffer_count);
  draining_.reserve(buffer_count);
  loop_.run_sync([&] {
    socket_ = backend.make_send_socket();
    socket_->accept_replies(ReplyWindow{replies_->options().max_size, replies_->options().credits});
    LowLevelSendSocket::Callbacks callbacks;
    callbacks.on_connected = [this](const ConnectionInfo& info) { on_connected(info); };
    callbacks.on_connect_failed = [this](const Error& error) { on_failed(error); };
    callbacks.on_disconnected = [this](const Error& error) { on_failed(error); };
    callbacks.on_send_completed = [this](Buffer* buffer) { on_completed(buffer); };
    callbacks.on_reply = [replies = replies_](ReceivedBuffer reply) { replies->deliver(std::move(reply)); };
    const auto hello_bytes = encode_hello(hello);
    socket_->connect(remote, hello_bytes, std::move(callbacks));
    // After connect(): only then does a back-end know which device (domain) to register
    // with. No callback runs before this task returns, so nothing needs the pool yet.
    pool_ = std::make_unique<BufferPool>(buffer_count, buffer_size, socket_->registrar());
    efficient_buffer_size_ = socket_->efficient_buffer_size();
    // The introduction goes first (below), from a buffer of its own: the pool's are the caller's.
    introduction_bytes_ = introduction;
    introduction_ = Buffer{introduction_bytes_.data(), introduction_bytes_.size(), introduction_bytes_.size()};
    registrar_ = socket_->registrar();
    if (registrar_ != nullptr) registrar_->register_buffer(introduction_);
  });
  submit(&introduction_);
}

BufferSender::~BufferSender() {
  close();
  if (registrar_ != nullptr) registrar_->deregister_buffer(introduction_);
}

void BufferSender::close() noexcept {
  loop_.run_sync([this] {
    if (closed_) return;
    closed_ = true;
    socket_->close();
    reclaim_all();
    state_.set_failed(Error(Errc::closed, fmt::format("the send socket to {} was closed", remote_.to_string())));
    pool_->close();
    replies_->close();
  });
}

void BufferSender::abort(const Error& error) {
  loop_.run_sync([this, &error] { on_failed(error); });
}

void BufferSender::submit(Buffer* buffer) {
  {
    std::lock_guard lock(idle_mutex_);
    ++outstanding_;
  }
  if (loop_.in_loop_thread()) {
    // Buffers user threads queued earlier go first: the flush timer submits from here,
    // and its page must not overtake the pages before it.
    drain_submitted();
    send_on_loop(buffer);
    return;
  }
  bool schedule = false;
  {
    std::lock_guard lock(submit_mutex_);
    submitted_.push_back(buffer);
    schedule = !std::exchange(drain_scheduled_, true);
  }
  // Only `this` is captured: no allocation. The destructor's run_sync() is queued behind
  // this task, so `this` outlives it.
  if (schedule) {
    loop_.post([this] {
      {
        std::lock_guard lock(submit_mutex_);
        drain_scheduled_ = false;
      }
      drain_submitted();
    });
  }
}

void BufferSender::drain_submitted() {
  {
    std::lock_guard lock(submit_mutex_);
    if (submitted_.empty()) return;
    draining_.swap(submitted_);
    // A task already posted finds the queue empty; no need to cancel it.
  }
  for (Buffer* buffer : draining_) send_on_loop(buffer);
  draining_.clear();
}

void BufferSender::send_on_loop(Buffer* buffer) {
  if (closed_) {
    on_completed(buffer);  // the connection is gone: just recycle
    return;
  }
  if (!state_.connected()) {
    unconnected_.push_back(buffer);
    return;
  }
  in_flight_.push_back(buffer);
  send_to_socket(buffer);
}

void BufferSender::send_to_socket(Buffer* buffer) {
  // A back-end's send() must not throw (backend.hpp); should one (a third-party back-end, a
  // decorator whose registration failed), the connection fails instead of the loop's drain.
  try {
    socket_->send(buffer);
  } catch (const Error& error) {
    on_failed(error);
  } catch (const std::exception& error) {
    on_failed(Error(Errc::backend_error, fmt::format("sending to {} failed: {}", remote_.to_string(), error.what())));
  }
}

void BufferSender::on_connected(const ConnectionInfo& info) {
  stats_.connections().fetch_add(1, std::memory_order_relaxed);
  for (Buffer* buffer : unconnected_) {
    if (buffer->size > info.peer_max_buffer_size) {
      on_failed(Error(Errc::message_too_large,
                      fmt::format("{} accepts buffers of at most {} bytes, but {} bytes were queued for it",
                                  remote_.to_string(), info.peer_max_buffer_size, buffer->size)));
      return;
    }
  }
  sends_unregistered_.store(socket_->sends_unregistered_memory(), std::memory_order_release);
  state_.set_connected(info.peer_max_buffer_size);
  log(LogLevel::debug, "send socket: connected to {}", remote_.to_string());
  while (!unconnected_.empty() && !closed_) {
    Buffer* buffer = unconnected_.front();
    unconnected_.pop_front();
    in_flight_.push_back(buffer);
    send_to_socket(buffer);
  }
}

void BufferSender::on_failed(const Error& error) {
  if (closed_) return;
  closed_ = true;
  log(error.code() == Errc::disconnected ? LogLevel::info : LogLevel::warn, "send socket: {}", error.what());
  if (state_.connected()) stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
  state_.set_failed(error);
  socket_->close();
  reclaim_all();
  pool_->close();  // wakes senders waiting for a buffer: they see the failure
  replies_->close();
}

void BufferSender::on_completed(Buffer* buffer) {
  if (!in_flight_.empty() && in_flight_.front() == buffer) in_flight_.pop_front();
  const bool borrowed = is_borrowed(buffer);
  if (!borrowed && buffer != &introduction_) pool_->release(buffer);
  bool wake = false;
  {
    std::lock_guard lock(idle_mutex_);
    wake = --outstanding_ == 0;
    if (borrowed) wake |= --borrowed_outstanding_ == 0;
  }
  if (wake) idle_changed_.notify_all();
}

void BufferSender::reclaim_all() {
  // Buffers a user thread submitted that the loop has not picked up yet: complete them now,
  // so that nothing (a borrowed frame above all) is still owed once this returns.
  std::vector<Buffer*> submitted;
  {
    std::lock_guard lock(submit_mutex_);
    submitted.swap(submitted_);
  }
  unconnected_.insert(unconnected_.end(), submitted.begin(), submitted.end());
  for (auto* queue : {&in_flight_, &unconnected_}) {
    while (!queue->empty()) {
      Buffer* buffer = queue->front();
      queue->pop_front();
      {
        std::lock_guard lock(idle_mutex_);
        ++lost_;
        if (is_borrowed(buffer)) ++borrowed_lost_;
      }
      on_completed(buffer);
    }
  }
}

void BufferSender::send_borrowed(std::span<const std::byte> data, std::size_t frame_size,
                                 std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!data.empty()) {
    // A window of frames at a time: the array is refilled only once the back-end has
    // finished with all of them.
    std::size_t count = 0;
    for (; count < borrowed_.size() && !data.empty(); ++count) {
      const std::size_t n = std::min(frame_size, data.size());
      // The back-end only reads a send buffer.
      auto* bytes = const_cast<std::byte*>(data.data());
      borrowed_[count] = Buffer{bytes, n, n, nullptr, nullptr};
      data = data.subspan(n);
    }
    {
      std::lock_guard lock(idle_mutex_);
      borrowed_outstanding_ = count;
      borrowed_lost_ = 0;
    }
    for (std::size_t i = 0; i < count; ++i) submit(&borrowed_[i]);
    std::unique_lock lock(idle_mutex_);
    const bool done = idle_changed_.wait_until(lock, deadline, [this] { return borrowed_outstanding_ == 0; });
    const bool lost = borrowed_lost_ != 0;
    lock.unlock();
    if (!done) {
      Error error(Errc::timeout,
                  fmt::format("a message to {} was still being sent after {} ms (the receiver is not keeping up); "
                              "the connection was closed, since the message's memory goes back to the caller",
                              remote_.to_string(),
                              std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
      abort(error);  // on the loop thread: the back-end lets go of the frames before it returns
      throw error;
    }
    if (lost) {
      state_.throw_if_failed();
      throw Error(Errc::closed, fmt::format("the send socket to {} was closed while sending", remote_.to_string()));
    }
  }
}

void BufferSender::wait_idle(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(idle_mutex_);
  const bool idle = idle_changed_.wait_for(lock, timeout, [this] { return outstanding_ == 0; });
  const bool all_sent = idle && lost_ == 0;
  lock.unlock();
  if (all_sent) return;  // even if the connection closed afterwards: nothing was lost
  state_.throw_if_failed();
  if (!idle) {
    throw Error(Errc::timeout, fmt::format("buffers to {} still in flight after {} ms", remote_.to_string(),
                                           std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
  }
}

}  // namespace netio::detail
