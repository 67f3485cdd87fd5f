// SPDX-License-Identifier: MIT
#include "backends/shm/shm_connection.hpp"

#include "backends/shm/in_place_lender.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace netio::shm {
namespace {
constexpr int max_deliveries_per_pump = 256;  // then other connections get the loop
}  // namespace

ShmConnection::ShmConnection(EventLoop& loop, posix::SocketFd fd, std::shared_ptr<Segment> segment,
                             RingProducer outbound, std::optional<RingConsumer> inbound, std::size_t inbound_credits,
                             std::string peer, std::string link)
    : loop_(loop),
      fd_(std::move(fd)),
      segment_(std::move(segment)),
      outbound_(outbound),
      inbound_(inbound),
      lender_(std::make_shared<InPlaceLender>(segment_, inbound_credits)),
      peer_(std::move(peer)),
      link_(std::move(link)),
      registration_(loop) {}

ShmConnection::~ShmConnection() { close(); }

void ShmConnection::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  started_ = true;
  busy_poll_ = loop_.busy_poll();
  lender_->set_waker([this, alive = std::weak_ptr<int>(alive_)] {
    if (loop_.in_loop_thread() && lending_) return;  // pump_inbound() reclaims after the callback
    loop_.post([this, alive] {
      if (!alive.expired()) resume();
    });
  });
  registration_.add(fd_.get(), EPOLLIN, [this](std::uint32_t events) { on_events(events); });
  if (busy_poll_) poller_ = loop_.add_poller([this] { pump(); });
  pump();
}

void ShmConnection::on_events(std::uint32_t events) {
  if (closed_) return;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    // Wake-up bytes carry nothing but "look": drain them, then look.
    std::byte scratch[256];
    for (;;) {
      const ssize_t n = ::recv(fd_.get(), scratch, sizeof scratch, 0);
      if (n > 0) continue;
      if (n == 0) {
        peer_closed_ = true;
      } else if (errno == EINTR) {
        continue;
      } else if (errno != EAGAIN) {
        peer_closed_ = true;
        peer_error_ = errno;
      }
      break;
    }
    if (peer_closed_) registration_.remove();  // nothing more to hear; a hang-up would spin
  }
  pump();
}

void ShmConnection::send(Buffer* buffer) {
  if (closed_) return;
  queue_.push_back(buffer);
  // At once, also from inside on_message (a reply to the message being handled): a reply
  // completes once in the ring, and the layer above's reply window counts the ones that
  // have not. From inside on_written, the writing loop on the stack takes it.
  if (started_ && !writing_) pump_outbound();
}

std::size_t ShmConnection::largest_queued() const noexcept {
  std::size_t largest = 0;
  for (const Buffer* buffer : queue_) largest = std::max(largest, buffer->size);
  return largest;
}

std::vector<Buffer*> ShmConnection::clear_outbound() {
  std::vector<Buffer*> cleared(queue_.begin(), queue_.end());
  queue_.clear();
  return cleared;
}

void ShmConnection::pump() {
  if (closed_ || pumping_) return;
  pumping_ = true;
  pump_inbound();
  if (!closed_) pump_outbound();
  pumping_ = false;
  if (closed_) return;
  // The peer is gone: the end once everything it wrote is delivered.
  if (peer_closed_ && (!inbound_ || inbound_drained_ || shut_down_) && !std::exchange(end_reported_, true)) {
    auto callback = callbacks_.on_peer_closed;
    if (callback) callback(peer_error_);
  }
}

void ShmConnection::pump_outbound() {
  if (writing_) return;
  writing_ = true;
  bool pushed = false;
  std::string corrupt;
  while (!queue_.empty() && !closed_) {
    Buffer* buffer = queue_.front();
    if (outbound_.push(buffer->bytes(), corrupt)) {
      queue_.pop_front();
      pushed = true;
      if (callbacks_.on_written) callbacks_.on_written(buffer);
      continue;
    }
    if (!corrupt.empty()) break;
    if (busy_poll_ || peer_closed_ || outbound_.wait_for_space(buffer->size, corrupt)) break;  // woken when freed
    if (!corrupt.empty()) break;
  }
  writing_ = false;
  if (closed_) return;
  if (!corrupt.empty()) {
    fail(Errc::protocol_error, fmt::format("{} corrupted the shared segment {}: {}", peer_, link_, corrupt));
    return;
  }
  if (pushed && outbound_.consumer_needs_wake()) wake_peer();
}

void ShmConnection::pump_inbound() {
  if (!inbound_) return;
  std::string corrupt;
  inbound_drained_ = false;
  for (int delivered = 0; !closed_;) {
    const std::uint64_t freed = lender_->reclaim(inbound_->read_index());
    inbound_->free_to(freed);
    if (lender_->exhausted()) break;  // a give_back() resumes
    if (delivered == max_deliveries_per_pump) {
      loop_.post([this, alive = std::weak_ptr<int>(alive_)] {
        if (!alive.expired()) pump();
      });
      break;
    }
    const auto entry = inbound_->next(corrupt);
    if (entry.end == 0) {
      inbound_drained_ = corrupt.empty();
      if (!corrupt.empty() || busy_poll_ || peer_closed_) break;
      if (inbound_->wait_for_data(corrupt) || !corrupt.empty()) break;  // the peer wakes us
      inbound_drained_ = false;
      continue;
    }
    ++delivered;
    Buffer* buffer = lender_->lend(entry.payload, entry.end);
    lending_ = true;
    if (callbacks_.on_message) callbacks_.on_message(ReceivedBuffer(buffer, lender_));
    lending_ = false;
  }
  if (closed_) return;
  if (!corrupt.empty()) {
    fail(Errc::protocol_error, fmt::format("{} corrupted the shared segment {}: {}", peer_, link_, corrupt));
    return;
  }
  if (inbound_->producer_needs_wake()) wake_peer();
}

void ShmConnection::resume() {
  if (!closed_) pump();
}

void ShmConnection::wake_peer() {
  const std::byte wake{1};
  // A full socket buffer holds wake-ups the peer has not read yet: it will look anyway.
  if (::send(fd_.get(), &wake, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != EPIPE &&
      errno != ECONNRESET) {
    fail(Errc::disconnected, fmt::format("waking {} {} failed: {}", peer_, link_, posix::errno_text(errno)));
  }
}

bool ShmConnection::shut_down_writing(std::string& failure) {
  if (::shutdown(fd_.get(), SHUT_WR) == 0) {
    shut_down_ = true;
    return true;
  }
  failure = posix::errno_text(errno);
  return false;
}

std::size_t ShmConnection::bytes_held() const noexcept {
  // Pages: the ring starts on a page boundary and memory is backed a page at a time.
  return inbound_ ? (inbound_->high_water() + page_size - 1) / page_size * page_size : 0;
}

void ShmConnection::fail(Errc code, const std::string& why) {
  if (closed_) return;
  auto callback = callbacks_.on_failed;
  if (callback) callback(code, why);
}

void ShmConnection::silence() noexcept {
  if (closed_) return;
  closed_ = true;
  alive_.reset();
  lender_->set_waker(nullptr);
  if (poller_ != 0) loop_.remove_poller(std::exchange(poller_, 0));
  registration_.remove();
  queue_.clear();
}

void ShmConnection::close() noexcept {
  silence();
  if (!fd_) return;
  if (inbound_) inbound_->publish_delivered();  // before the close the peer sees
  fd_.reset();
}

}  // namespace netio::shm
