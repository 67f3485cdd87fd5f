// SPDX-License-Identifier: MIT
#include "buffer_sender.hpp"

#include "closing_senders.hpp"
#include "context_core.hpp"
#include "introduction.hpp"
#include "netio/internal/little_endian.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

namespace netio::detail {

BufferSender::BufferSender(Context& context, const Endpoint& remote, Hello hello, const Identity& identity,
                           const std::optional<PreSharedKey>& key, ReplyOptions replies, std::size_t buffer_count,
                           std::size_t buffer_size, std::shared_ptr<PagePool> shared_pages, bool close_awaits_receiver,
                           std::chrono::nanoseconds connect_timeout)
    : context_(share_context(context)),
      loop_(context_.loop()),
      closing_senders_(*context.core_->closing),
      remote_(remote),
      backend_(context.backend(remote)),
      name_(identity.name.empty() ? default_name() : identity.name),
      connect_timeout_(connect_timeout),
      replies_(std::make_shared<ReplyReceiver>(std::move(replies), remote.to_string())),
      introduction_bytes_(encode_introduction(identity)),  // throws before anything is set up
      key_(key),
      close_awaits_receiver_(close_awaits_receiver) {
  if (key_) {
    require_auth_support(fmt::format("the send socket to {}", remote.to_string()));
    if (introduction_bytes_.size() + auth_block_size > max_introduction_size) {
      throw Error(Errc::message_too_large, fmt::format("the send socket to {}: the identity is too long to declare "
                                                       "with a key (its proof takes {} bytes)",
                                                       remote.to_string(), auth_block_size));
    }
    nonce_ = random_nonce();
    hello.challenge = nonce_;
    introduction_bytes_.insert(introduction_bytes_.begin(), auth_block_size, std::byte{0});
    store_le<std::uint32_t>(introduction_bytes_.data(), auth_block_magic);
  }
  if (connect_timeout_ >= std::chrono::nanoseconds::zero()) {
    backoff_.emplace(ConnectBackoff::Clock::now(), connect_timeout_,
                     static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(this)) ^
                         static_cast<std::uint64_t>(ConnectBackoff::Clock::now().time_since_epoch().count()));
  }
  submitted_.reserve(buffer_count + 1);
  draining_.reserve(buffer_count + 1);
  hello_bytes_ = encode_hello(hello);
  reply_window_ = ReplyWindow{replies_->options().max_size, replies_->options().credits};
  loop_.run_sync([&] {
    socket_ = backend_.make_send_socket();
    socket_->accept_replies(reply_window_);
    // A shared pool registers with the back-end's registrar from before connect(), the same
    // for every socket of the back-end (see LowLevelSendSocket::registrar()).
    if (shared_pages) pool_ = share_of(shared_pages, socket_->registrar(), remote_.to_string());
    socket_->connect(remote, hello_bytes_, make_callbacks());
    // After connect(): only then does a back-end know which device (domain) to register
    // with. No callback runs before this task returns, so nothing needs the pool yet.
    if (!pool_) {
      send_memory_ = socket_->send_memory();
      pool_ = std::make_unique<OwnedPages>(buffer_count, buffer_size, socket_->registrar(), send_memory_.get());
    }
    efficient_buffer_size_ = socket_->efficient_buffer_size();
    // The introduction goes first, from a buffer of its own (the pool's are the caller's),
    // queued until the connection is up like anything submitted now.
    introduction_ = Buffer{introduction_bytes_.data(), introduction_bytes_.size(), introduction_bytes_.size()};
    registrar_ = socket_->registrar();
    if (registrar_ != nullptr) registrar_->register_buffer(introduction_);
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    unconnected_.push_back(&introduction_);
  });
}

LowLevelSendSocket::Callbacks BufferSender::make_callbacks() {
  LowLevelSendSocket::Callbacks callbacks;
  callbacks.on_connected = [this](const ConnectionInfo& info) {
    on_connected(info);
    maybe_finish_close();
  };
  // `this` is safe here: the socket is closed before this object goes, and a closed
  // back-end socket calls nothing.
  callbacks.on_connect_failed = [this](const Error& error) {
    on_connect_failed(error);
    maybe_finish_close();
  };
  callbacks.on_disconnected = [this](const Error& error) {
    if (stream_ended_ && error.code() == Errc::disconnected) {
      // The receiver closed after the end of the stream: it has read everything.
      log(LogLevel::debug, "send socket to {}: the receiver closed after the end of the stream ({})",
          remote_.to_string(), error.what());
      finish_close(std::nullopt);
      return;
    }
    if (stream_ended_) {
      // Everything was sent, but the receiver reset the connection: it closed with bytes
      // unread (or vanished), and those are lost.
      finish_close(Error(Errc::disconnected,
                         fmt::format("closing the send socket to {}: everything was sent, but the receiver closed the "
                                     "connection before reading it all ({}); what it had not read is lost",
                                     remote_.to_string(), error.what())));
      return;
    }
    on_failed(error);
    maybe_finish_close();
  };
  callbacks.on_sent_in_place = [this](Buffer* buffer) {
    lent_.push_back(buffer);  // the pool gets it back at its on_send_completed
    on_completed(buffer);
    maybe_finish_close();
  };
  callbacks.on_send_completed = [this](Buffer* buffer) {
    if (const auto it = std::find(lent_.begin(), lent_.end(), buffer); it != lent_.end()) {
      lent_.erase(it);  // sent and counted already: now the caller's again
      pool_->release(buffer);
      return;
    }
    on_completed(buffer);
    maybe_finish_close();
  };
  callbacks.on_reply = [replies = replies_](ReceivedBuffer reply) { replies->deliver(std::move(reply)); };
  return callbacks;
}

BufferSender::~BufferSender() {
  // The last reference goes on the loop thread (a posted task, the end of an asynchronous
  // close) or on a user thread (the socket's destructor, after its blocking close).
  try {
    loop_.run_sync([this] { close_now(); });
  } catch (const std::exception& e) {
    log(LogLevel::error, "send socket to {}: closing failed: {}", remote_.to_string(), e.what());
  }
  if (registrar_ != nullptr) registrar_->deregister_buffer(introduction_);
}

void BufferSender::close_now() noexcept {
  if (close_timer_ != 0) loop_.cancel_timer(std::exchange(close_timer_, 0));
  if (retry_timer_ != 0) loop_.cancel_timer(std::exchange(retry_timer_, 0));
  if (deadline_timer_ != 0) loop_.cancel_timer(std::exchange(deadline_timer_, 0));
  if (closed_) return;
  closed_ = true;
  state_.set_failed(closed_error());
  pool_->close();  // before reclaim_all(), as in on_failed()
  socket_->close();
  reclaim_all();
  replies_->close();
}

Error BufferSender::closed_error() const {
  if (auto failure = state_.failure()) return *failure;  // aborted, or failed: say why
  return Error(Errc::closed, fmt::format("the send socket to {} was closed", remote_.to_string()));
}

Error BufferSender::would_block(std::string_view call, std::string_view advice) const {
  return Error(Errc::would_block, fmt::format("{} on the send socket to {} would have to wait on the event-loop "
                                              "thread, which is the thread it waits for; {}",
                                              call, remote_.to_string(), advice));
}

void BufferSender::refuse_on_loop_thread(std::string_view call, std::string_view advice) const {
  if (loop_.in_loop_thread()) throw would_block(call, advice);
}

void BufferSender::throw_if_context_gone() const {
  detail::throw_if_context_gone(context_, [this] { return fmt::format("the send socket to {}", remote_.to_string()); });
}

void BufferSender::throw_if_unusable() const {
  throw_if_context_gone();
  if (closing()) throw closed_error();
  state_.throw_if_failed();
}

void BufferSender::abort(const Error& error) {
  loop_.run_sync([this, &error] {
    on_failed(error);
    maybe_finish_close();
  });
}

void BufferSender::abandon(std::string_view reason) {
  abort(Error(Errc::closed, fmt::format("the connection to {} was aborted: {}", remote_.to_string(), reason)));
  close_async(std::chrono::seconds(1), {});  // ends at once: nothing is in flight after abort()
}

bool BufferSender::submit(Buffer* buffer) {
  std::size_t outstanding = outstanding_.load(std::memory_order_relaxed);
  do {
    if ((outstanding & closing_bit) != 0) return false;
  } while (!outstanding_.compare_exchange_weak(outstanding, outstanding + 1, std::memory_order_acq_rel,
                                               std::memory_order_relaxed));
  if (loop_.in_loop_thread()) {
    // Buffers user threads queued earlier go first: the flush timer submits from here,
    // and its page must not overtake the pages before it.
    drain_submitted();
    send_on_loop(buffer);
    return true;
  }
  bool schedule = false;
  {
    std::lock_guard lock(submit_mutex_);
    submitted_.push_back(buffer);
    has_submitted_.store(true, std::memory_order_release);
    schedule = !std::exchange(drain_scheduled_, true);
  }
  // The task holds a reference: the owner may let go of this object (on the loop thread,
  // where nothing orders its destruction behind this task) before it runs. One shared_ptr
  // fits std::function's inline storage: no allocation.
  if (schedule) {
    loop_.post([self = shared_from_this()] {
      {
        std::lock_guard lock(self->submit_mutex_);
        self->drain_scheduled_ = false;
      }
      self->drain_submitted();
    });
  }
  return true;
}

void BufferSender::drain_submitted() {
  // A user thread's submit() that happened before this call has set the flag.
  if (!has_submitted_.load(std::memory_order_acquire)) return;
  {
    std::lock_guard lock(submit_mutex_);
    if (submitted_.empty()) return;
    draining_.swap(submitted_);
    has_submitted_.store(false, std::memory_order_relaxed);
    // A task already posted finds the queue empty; no need to cancel it.
  }
  for (Buffer* buffer : draining_) send_on_loop(buffer);
  draining_.clear();
}

void BufferSender::send_on_loop(Buffer* buffer) {
  if (closed_) {
    {
      std::lock_guard lock(idle_mutex_);
      ++lost_;
      if (is_borrowed(buffer)) ++borrowed_lost_;
    }
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

namespace {

// Whether a failed attempt may succeed later: nobody listening yet, a network that did not
// answer, a listener that went away mid-handshake. A listener that answered with a refusal
// (not admitted, a wrong key, not a netio socket) says the same the next time.
bool worth_retrying(const Error& error) {
  const auto& code = error.code();
  if (code.category() != error_category()) return true;  // a system error
  switch (static_cast<Errc>(code.value())) {
    case Errc::connection_refused:
    case Errc::disconnected:
    case Errc::timeout:
    case Errc::backend_error: return true;
    default: return false;
  }
}

long long retry_ms(std::chrono::nanoseconds duration) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration).count();
}

}  // namespace

void BufferSender::on_connect_failed(const Error& error) {
  if (closed_) return;
  // A close (or destruction) that started while the first attempt was under way ends with
  // its failure, as does a socket told to try once.
  if (!backoff_ || close_started_ || !worth_retrying(error)) {
    on_failed(error);
    return;
  }
  const auto now = ConnectBackoff::Clock::now();
  const auto delay = backoff_->next_delay(now);
  last_connect_error_ = error.what();
  if (!delay) {
    give_up_connecting();
    return;
  }
  retrying_.store(true, std::memory_order_release);
  socket_->close();  // destroyed at the next attempt: not inside its own callback
  if (backoff_->worth_logging()) {
    const auto left = backoff_->remaining(now);
    log(LogLevel::info, "send socket {} to {}: connecting failed (attempt {}): {}; trying again in {} ms, {}", name_,
        remote_.to_string(), backoff_->attempts(), error.what(), retry_ms(*delay),
        left ? fmt::format("for {} ms more (connect_timeout)", retry_ms(*left)) : std::string("without end"));
  }
  if (!started_) {
    // Failed before the owner holds this object (a refusal the loop thread saw while the
    // constructor's caller was still making the shared_ptr): start() schedules the retry.
    pending_retry_ = *delay;
    return;
  }
  arm_connect_deadline();
  schedule_retry(*delay);
}

void BufferSender::schedule_retry(std::chrono::nanoseconds delay) {
  retry_timer_ = loop_.add_timer(delay, std::chrono::nanoseconds::zero(), [weak = weak_from_this()] {
    if (const auto self = weak.lock()) {
      self->retry_timer_ = 0;
      self->connect_again();
      self->maybe_finish_close();
    }
  });
}

void BufferSender::start() {
  if (!backoff_) return;
  loop_.post([weak = weak_from_this()] {
    const auto self = weak.lock();
    if (!self || self->started_) return;
    self->started_ = true;
    if (self->closed_ || self->state_.connected()) return;
    self->arm_connect_deadline();
    if (const auto delay = std::exchange(self->pending_retry_, std::nullopt)) self->schedule_retry(*delay);
  });
}

void BufferSender::arm_connect_deadline() {
  if (closed_ || state_.connected() || deadline_timer_ != 0 || !backoff_) return;
  const auto left = backoff_->remaining(ConnectBackoff::Clock::now());
  if (!left) return;
  deadline_timer_ = loop_.add_timer(*left, std::chrono::nanoseconds::zero(), [weak = weak_from_this()] {
    if (const auto self = weak.lock()) {
      self->deadline_timer_ = 0;
      self->give_up_connecting();
      self->maybe_finish_close();
    }
  });
}

void BufferSender::connect_again() {
  if (closed_ || state_.connected()) return;
  std::unique_ptr<LowLevelSendSocket> previous = std::move(socket_);  // closed in its callback
  try {
    socket_ = backend_.make_send_socket();
  } catch (const Error& error) {
    socket_ = std::move(previous);
    on_failed(error);
    return;
  }
  if (!first_socket_) first_socket_ = std::move(previous);  // else destroyed here, a task of its own
  try {
    if (send_memory_) socket_->use_send_memory(send_memory_);  // the pool's buffers lie there
    socket_->accept_replies(reply_window_);
    socket_->connect(remote_, hello_bytes_, make_callbacks());
  } catch (const Error& error) {
    on_failed(error);
  }
}

void BufferSender::give_up_connecting() {
  if (closed_ || state_.connected() || !backoff_) return;
  on_failed(
      Error(Errc::timeout,
            fmt::format("the send socket {} could not connect to {} within {} ms (connect_timeout): {} attempt(s), "
                        "the last failed: {}",
                        name_, remote_.to_string(), retry_ms(connect_timeout_),
                        std::max<std::uint64_t>(backoff_->attempts(), 1),
                        last_connect_error_.empty() ? std::string("it was still under way") : last_connect_error_)));
}

void BufferSender::on_connected(const ConnectionInfo& info) {
  retrying_.store(false, std::memory_order_release);
  if (deadline_timer_ != 0) loop_.cancel_timer(std::exchange(deadline_timer_, 0));
  if (key_) {
    // The listener proves it holds the key before anything (the introduction) goes out.
    const auto data = std::span<const std::byte>(info.accept_data);
    AuthNonce listener_nonce{};
    const bool answered = data.size() == auth_accept_size;
    if (answered) std::copy_n(data.begin(), auth_nonce_size, listener_nonce.begin());
    if (!answered ||
        !auth_proof_matches(*key_, AuthRole::listener, nonce_, listener_nonce, data.subspan(auth_nonce_size))) {
      on_failed(Error(Errc::handshake_rejected,
                      fmt::format("{} accepted, but could not prove that it holds the pre-shared key ({}): "
                                  "authentication failed; is its key the same as this side's?",
                                  remote_.to_string(), answered ? "a wrong proof" : "no answer to the challenge")));
      return;
    }
    const AuthProof proof = auth_proof(*key_, AuthRole::sender, nonce_, listener_nonce);
    std::copy(proof.begin(), proof.end(), introduction_bytes_.begin() + 4);
  }
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
  // A peer that went away, or an abandon() the owner asked for, is no warning.
  const bool expected = error.code() == Errc::disconnected || error.code() == Errc::closed;
  const bool was_connected = state_.connected();
  if (was_connected) stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
  // Said once. A caller waiting for the connection throws it. A connection that never came
  // up is the owner's next call's exception (send(), wait_connected()): logged at close only
  // if nobody was told. A connection lost while up is logged now.
  if (!state_.set_failed(error)) {
    if (was_connected) {
      log(expected ? LogLevel::info : LogLevel::warn, "send socket: {}", error.what());
    } else {
      untold_failure_ = expected ? LogLevel::info : LogLevel::warn;
    }
  }
  failure_logged_ = true;
  // Closed before the buffers in flight come back (reclaim_all), so that a sender waiting
  // for one wakes to the failure rather than taking one of them for a message that would
  // then be lost without a word.
  pool_->close();
  socket_->close();
  reclaim_all();
  replies_->close();
}

void BufferSender::on_completed(Buffer* buffer) {
  if (!in_flight_.empty() && in_flight_.front() == buffer) in_flight_.pop_front();
  const bool borrowed = is_borrowed(buffer);
  const bool lent = !lent_.empty() && lent_.back() == buffer;  // on_sent_in_place: not back yet
  if (!borrowed && !lent && buffer != &introduction_) pool_->release(buffer);
  // Sequentially consistent with wait_idle()'s announcement: either it sees the count at 0
  // or this sees it waiting; the lock then orders the wake-up after its wait began.
  bool wake = ((outstanding_.fetch_sub(1, std::memory_order_seq_cst) - 1) & ~closing_bit) == 0 &&
              idle_waiters_.load(std::memory_order_seq_cst) != 0;
  if (borrowed) {
    std::lock_guard lock(idle_mutex_);
    wake |= --borrowed_outstanding_ == 0;
  } else if (wake) {
    std::lock_guard lock(idle_mutex_);
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
    has_submitted_.store(false, std::memory_order_relaxed);
  }
  unconnected_.insert(unconnected_.end(), submitted.begin(), submitted.end());
  // Sent and counted, still with the receiver: the closed back-end drops them, so they are
  // the pool's again.
  for (Buffer* buffer : std::exchange(lent_, {})) pool_->release(buffer);
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
    std::size_t refused = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (!submit(&borrowed_[i])) ++refused;  // a close started: the rest stays with us
    }
    std::unique_lock lock(idle_mutex_);
    borrowed_outstanding_ -= refused;
    const bool done = idle_changed_.wait_until(lock, deadline, [this] { return borrowed_outstanding_ == 0; });
    const bool lost = borrowed_lost_ != 0;
    lock.unlock();
    if (!done) {
      Error error(
          Errc::timeout,
          fmt::format("a message to {} was still being sent after {} ms (the receiver is not keeping up); "
                      "the connection was closed, since the message's memory goes back to the caller",
                      remote_.to_string(), std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
      abort(error);  // on the loop thread: the back-end lets go of the frames before it returns
      throw error;
    }
    if (lost || refused != 0) {
      state_.throw_if_failed();
      throw Error(Errc::closed, fmt::format("the send socket to {} was closed while sending", remote_.to_string()));
    }
  }
}

bool BufferSender::wait_idle(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(idle_mutex_);
  idle_waiters_.fetch_add(1, std::memory_order_seq_cst);
  const bool idle = idle_changed_.wait_for(lock, timeout, [this] { return outstanding() == 0; });
  idle_waiters_.fetch_sub(1, std::memory_order_relaxed);
  const bool all_sent = idle && lost_ == 0;
  lock.unlock();
  if (all_sent) return true;  // even if the connection closed afterwards: nothing was lost
  state_.throw_if_failed();
  return idle;
}

void BufferSender::close_async(std::chrono::nanoseconds timeout, OnClosed on_closed) {
  outstanding_.fetch_or(closing_bit, std::memory_order_acq_rel);
  if (loop_.in_loop_thread()) {
    start_close(timeout, std::move(on_closed));
    return;
  }
  // Once the loop has stopped, post() runs the task here and now.
  loop_.post([self = shared_from_this(), timeout, on_closed = std::move(on_closed)]() mutable {
    self->start_close(timeout, std::move(on_closed));
  });
}

void BufferSender::start_close(std::chrono::nanoseconds timeout, OnClosed on_closed) {
  if (on_closed) on_closed_.push_back(std::move(on_closed));
  if (close_ending_) {
    // Already over: report what it reported.
    std::optional<Error> result;
    {
      std::lock_guard lock(idle_mutex_);
      result = close_result_;
    }
    report_closed(result);
    return;
  }
  if (std::exchange(close_started_, true)) return;
  drain_submitted();  // what user threads handed over before the close goes first
  if (retrying_.load(std::memory_order_acquire) && !closed_) {
    // Waiting for a receiver that may never come: the close ends now, not after `timeout`
    // (nor a destructor's wait), and drops what was queued for it.
    on_failed(Error(Errc::closed, fmt::format("the send socket {} to {} was closed while connecting ({} attempt(s) "
                                              "failed, the last: {}); what was queued for it was dropped",
                                              name_, remote_.to_string(), backoff_->attempts(), last_connect_error_)));
  }
  if (!loop_.in_loop_thread()) {
    // The loop has stopped: nothing will complete any more.
    end_close_at_stop();
    return;
  }
  closing_senders_.keep(shared_from_this());
  close_timer_ = loop_.add_timer(timeout, std::chrono::nanoseconds::zero(), [weak = weak_from_this(), timeout] {
    const auto self = weak.lock();
    if (!self) return;
    self->close_timer_ = 0;  // a one-shot timer is gone once it fired
    const std::size_t outstanding = self->outstanding();
    if (self->stream_ended_) {
      self->finish_close(
          Error(Errc::timeout,
                fmt::format("closing the send socket to {}: everything was sent, but the receiver did not read it all "
                            "within {} ms (its user is not taking messages?); the rest may still arrive",
                            self->remote_.to_string(),
                            std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count())));
      return;
    }
    self->finish_close(
        Error(Errc::timeout,
              fmt::format("closing the send socket to {}: {} buffers still unsent after {} ms (the receiver is not "
                          "keeping up) were dropped",
                          self->remote_.to_string(), outstanding,
                          std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count())));
  });
  maybe_finish_close();
}

void BufferSender::maybe_finish_close() {
  if (!close_started_ || close_ending_) return;
  if (outstanding() != 0) return;
  bool lost = false;
  {
    std::lock_guard lock(idle_mutex_);
    lost = lost_ != 0;
  }
  if (!lost) {
    // Everything went to the network; with close_awaits_receiver the close waits on for
    // the receiver to read it, where the back-end can tell: the receiver's close
    // (on_disconnected) or the close timer ends it.
    if (close_awaits_receiver_ && !closed_ && state_.connected()) {
      if (stream_ended_) return;
      stream_ended_ = socket_->end_stream();
      if (stream_ended_ && !closed_) return;  // (end_stream() may fail the connection from inside)
    }
    finish_close(std::nullopt);
    return;
  }
  auto failure = state_.failure();
  finish_close(failure ? *failure
                       : Error(Errc::closed, fmt::format("the send socket to {} lost buffers", remote_.to_string())));
}

void BufferSender::end_close_at_stop() noexcept {
  const std::size_t outstanding = this->outstanding();
  bool lost = false;
  {
    std::lock_guard lock(idle_mutex_);
    lost = lost_ != 0;
  }
  if (outstanding == 0 && !lost) {
    // Everything went to the network; a receiver's close (close_awaits_receiver) can no
    // longer be awaited, and is not needed for the bytes to arrive.
    finish_close(std::nullopt);
    return;
  }
  if (outstanding == 0) {
    maybe_finish_close();
    if (close_ending_) return;
  }
  finish_close(Error(Errc::closed, fmt::format("the event loop stopped while the send socket to {} was closing: {} "
                                               "buffers unsent",
                                               remote_.to_string(), outstanding)));
}

void BufferSender::finish_close(std::optional<Error> error) noexcept {
  if (std::exchange(close_ending_, true)) return;
  close_now();  // may run inside a back-end callback: close() is allowed there, destruction is not
  {
    std::lock_guard lock(idle_mutex_);
    close_finished_ = true;
    close_result_ = error;
  }
  idle_changed_.notify_all();
  if (untold_failure_ && on_closed_.empty() && !state_.failure_told()) {  // on_closed is told
    if (const auto failure = state_.failure()) log(*untold_failure_, "send socket: {}", failure->what());
  }
  // Said once: to whoever asked (on_closed), else (a destructor's close) to the log.
  if (error && on_closed_.empty() && !failure_logged_) {
    log(LogLevel::warn, "send socket to {}: closed with messages unsent: {}", remote_.to_string(), error->what());
  }
  report_closed(error);
  // The last reference may be the one kept while closing: let it go in a task of its own,
  // outside the back-end callback this may run in.
  if (auto kept = closing_senders_.release(this)) loop_.post([kept = std::move(kept)] {});
}

void BufferSender::report_closed(const std::optional<Error>& result) noexcept {
  for (auto& callback : std::exchange(on_closed_, {})) {
    try {
      callback(result ? &*result : nullptr);
    } catch (const std::exception& e) {
      log(LogLevel::error, "send socket to {}: the on_closed callback threw: {}", remote_.to_string(), e.what());
    }
  }
}

std::optional<Error> BufferSender::close_and_wait(std::chrono::nanoseconds timeout) {
  close_async(timeout, {});
  std::unique_lock lock(idle_mutex_);
  // The close ends by itself within `timeout` (a loop timer); the margin only guards
  // against a loop that no longer runs.
  if (!idle_changed_.wait_for(lock, timeout + std::chrono::seconds(5), [this] { return close_finished_; })) {
    Error error(Errc::timeout, fmt::format("closing the send socket to {} did not end", remote_.to_string()));
    log(LogLevel::warn, "send socket: {}", error.what());
    return error;
  }
  return close_result_;
}

}  // namespace netio::detail
