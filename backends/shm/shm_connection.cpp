// SPDX-License-Identifier: MIT
#include "backends/shm/shm_connection.hpp"

#include "backends/shm/in_place_lender.hpp"
#include "backends/shm/segment_passing.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace netio::shm {
namespace {
constexpr int max_deliveries_per_pump = 256;  // then other connections get the loop
// Below this a buffer is copied: a reference holds the sender's buffer until the receiver
// is done with it, which a small message's copy does not pay for.
constexpr std::size_t min_referenced_size = 16 * 1024;
// How long the loop stays awake after a side answered what came in (EventLoop::
// stay_awake_until): a round trip on one node, with time to spare.
constexpr std::chrono::microseconds answer_window{20};
// Wake-up bytes are drained this many at a time: a flood costs one system call per 64 KiB.
constexpr std::size_t wake_up_read_size = 64 * 1024;
// A peer writes a wake-up byte only when it finds a waiting flag this side set (and clears
// it): at most one per wait announced, and one beside its send area. Beyond twice that and
// this slack it floods, and is dropped (issue 49).
constexpr std::uint64_t wake_up_slack = 1024;
std::size_t saturated_product(std::size_t a, std::size_t b) noexcept {
  return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}
}  // namespace

ShmConnection::ShmConnection(EventLoop& loop, posix::SocketFd fd, std::shared_ptr<Segment> segment,
                             RingProducer outbound, std::optional<RingConsumer> inbound, std::size_t inbound_credits,
                             std::string link)
    : loop_(loop),
      fd_(std::move(fd)),
      segment_(std::move(segment)),
      outbound_(outbound),
      inbound_(inbound),
      lender_(std::make_shared<InPlaceLender>(segment_, inbound_credits)),
      area_window_(inbound ? saturated_product(2 * std::max<std::size_t>(inbound_credits, 1), inbound->max_payload())
                           : 0),
      link_(std::move(link)),
      registration_(loop) {}

ShmConnection::~ShmConnection() { close(); }

void ShmConnection::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  started_ = true;
  busy_poll_ = loop_.busy_poll();
  lender_->set_waker([this, alive = std::weak_ptr<int>(alive_)] {
    if (loop_.in_loop_thread() && lending_) return;  // pump_inbound() reclaims after the callback
    // A stopped loop (its Context gone) has nothing left to resume, and posting to it would
    // run the task here, under the lender's lock, with the loop's serial lock taken after
    // it: the reverse of a stopped loop's run_sync() (TSan: lock-order inversion).
    if (!loop_.running()) return;
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
  std::string corrupt;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_socket(corrupt);
  if (!corrupt.empty()) {
    fail(Errc::protocol_error, fmt::format("shm connection {}: {}", link_, corrupt));  // link_ names the peer
    return;
  }
  pump();
}

void ShmConnection::read_socket(std::string& corrupt) {
  if (peer_closed_) return;
  // Wake-up bytes carry nothing but "look": drain them, then look. One of them may carry
  // the peer's send area. One buffer per loop thread, large: a flood is read in few calls.
  thread_local std::array<char, wake_up_read_size> scratch;
  for (;;) {
    iovec iov{scratch.data(), scratch.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_.get(), &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n > 0) {
      wake_ups_read_ += static_cast<std::uint64_t>(n);
      if (wake_ups_read_ > 2 * waits_announced_ + wake_up_slack) {
        corrupt = fmt::format("sent {} wake-up bytes though this side waited only {} times (a wake-up flood)",
                              wake_ups_read_, waits_announced_);
        return;
      }
      auto descriptors = received_descriptors(message);
      if (descriptors.empty() && (message.msg_flags & MSG_CTRUNC) == 0) continue;
      if (descriptors.size() != 1 || peer_area_ || (message.msg_flags & MSG_CTRUNC) != 0) {
        // Say what the peer did: a send area is one descriptor, passed once.
        if (peer_area_) {
          corrupt = fmt::format("the peer passed {} descriptor(s) after its send area (one send area, passed once)",
                                descriptors.size());
        } else if ((message.msg_flags & MSG_CTRUNC) != 0) {
          corrupt = "the peer passed more descriptors in one message than the one of a send area";
        } else {
          corrupt =
              fmt::format("the peer passed {} descriptors in one message (a send area is one)", descriptors.size());
        }
        return;
      }
      std::string why;
      peer_area_ = SendArea::attach(std::move(descriptors.front()), max_send_area_capacity, why);
      if (!peer_area_) {
        corrupt = why;
        return;
      }
      lender_->hold_area(peer_area_, area_window_);
      continue;
    }
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
  for (;;) {
    complete_returned(corrupt);
    while (!queue_.empty() && !closed_ && corrupt.empty()) {
      Buffer* buffer = queue_.front();
      bool referenced = false;
      if (push(buffer, referenced, corrupt)) {
        queue_.pop_front();
        pushed = true;
        if (referenced) {
          in_flight_.push_back(InFlight{outbound_.head(), buffer, outbound_.last_payload() + returned_flag_offset});
          referenced_bytes_ += buffer->size;
          if (callbacks_.on_sent_in_place) callbacks_.on_sent_in_place(buffer);
        } else if (callbacks_.on_written) {
          callbacks_.on_written(buffer);
        }
        continue;
      }
      if (!corrupt.empty()) break;
      // A reference over the receiver's window waits for pages to come back (below); one the
      // ring has no room for waits for room, as a copy does: with no page in flight nothing
      // else would wake us.
      if (referenced && referenced_bytes_ + buffer->size > outbound_.capacity()) break;
      const std::size_t entry = referenced ? reference_payload_size : buffer->size;
      if (busy_poll_ || peer_closed_ || announce_wait(outbound_.wait_for_space(entry, corrupt)))
        break;  // woken when freed
    }
    // Lent pages come back in any order: sleep until one does, unless one did meanwhile (the
    // receiver sets a page's flag, then reads our waiting flag; we set that, then read the
    // pages' flags: one of the two sees the other).
    if (closed_ || !corrupt.empty() || in_flight_.empty() || busy_poll_ || peer_closed_) break;
    if (announce_wait(outbound_.wait_for_free(in_flight_.front().end, corrupt)) && !any_returned()) break;
    if (!corrupt.empty()) break;
  }
  writing_ = false;
  if (closed_) return;
  if (!corrupt.empty()) {
    fail(Errc::protocol_error,
         fmt::format("shm connection {}: the peer corrupted the shared segment: {}", link_, corrupt));
    return;
  }
  if (pushed && outbound_.consumer_needs_wake()) wake_peer();
  // An answer to what came in (a reply, a reply's next request) is likely answered soon:
  // stay awake for it rather than sleep and be woken (a one-way stream never does this).
  if (pushed && std::exchange(answering_, false) && !busy_poll_) {
    loop_.stay_awake_until(std::chrono::steady_clock::now() + answer_window);
  }
}

// Copies `buffer` into the ring, or, when it is a page of our send area and large enough
// for a reference to pay off, pushes where it is (`referenced`: it completes once given back).
bool ShmConnection::push(Buffer* buffer, bool& referenced, std::string& corrupt) {
  if (area_ && buffer->size >= min_referenced_size) {
    if (const auto reference = area_->reference_to(buffer->bytes()); reference && (area_passed_ || pass_area())) {
      referenced = true;
      // What is referenced counts as if it were in the ring: the receiver's window (its
      // credits x its largest buffer, the ring's size) bounds it as it bounds copies.
      if (referenced_bytes_ + buffer->size > outbound_.capacity()) return false;
      std::array<std::byte, reference_payload_size> payload{};  // the returned flag 0
      std::memcpy(payload.data(), &*reference, sizeof *reference);
      return outbound_.push(payload, corrupt, EntryKind::area_reference);
    }
  }
  return outbound_.push(buffer->bytes(), corrupt);
}

// Passes the send area's descriptor beside a wake-up byte, before the first reference to
// it: the peer finds it in its socket when it meets that reference. False when the socket
// is full now (the buffer is copied instead, and the next one tries again).
bool ShmConnection::pass_area() {
  const char byte = 2;
  const int error = pass_descriptor(fd_.get(), area_->fd(), std::span(&byte, 1));
  if (error == 0) {
    area_passed_ = true;
  } else if (error != EAGAIN && error != EPIPE && error != ECONNRESET) {
    log(LogLevel::info, "shm: passing the send area {} failed ({}): copying instead", link_, posix::errno_text(error));
    area_.reset();
  }
  return area_passed_;
}

// Pages come back in any order (their flags), and with the ring's tail (everything before
// it was freed, hence given back).
void ShmConnection::complete_returned(std::string& corrupt) {
  if (in_flight_.empty()) return;
  const std::uint64_t freed = outbound_.freed(corrupt);
  for (std::size_t i = 0; i < in_flight_.size() && !closed_;) {
    const InFlight page = in_flight_[i];
    if (page.end > freed && returned_flag(page.returned).load(std::memory_order_seq_cst) == 0) {
      ++i;
      continue;
    }
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(i));
    referenced_bytes_ -= page.buffer->size;
    if (callbacks_.on_written) callbacks_.on_written(page.buffer);
  }
}

// A page whose entry the receiver freed since complete_returned() looked may have had its
// flag's bytes reused by a later push: whatever they read then, that page is back.
bool ShmConnection::any_returned() const noexcept {
  return std::any_of(in_flight_.begin(), in_flight_.end(), [](const InFlight& page) {
    return returned_flag(page.returned).load(std::memory_order_seq_cst) != 0;
  });
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
      if (announce_wait(inbound_->wait_for_data(corrupt)) || !corrupt.empty()) break;  // the peer wakes us
      inbound_drained_ = false;
      continue;
    }
    ++delivered;
    answering_ = true;
    Buffer* buffer = entry.kind == EntryKind::area_reference ? lend_referenced(entry, corrupt)
                                                             : lender_->lend(entry.payload, entry.end);
    if (buffer == nullptr) break;
    lending_ = true;
    if (callbacks_.on_message) callbacks_.on_message(ReceivedBuffer(buffer, lender_));
    lending_ = false;
  }
  if (closed_) return;
  if (!corrupt.empty()) {
    fail(Errc::protocol_error,
         fmt::format("shm connection {}: the peer corrupted the shared segment: {}", link_, corrupt));
    return;
  }
  if (inbound_->producer_needs_wake()) wake_peer();
}

// An entry that names bytes of the peer's send area: lent where they are, checked first.
Buffer* ShmConnection::lend_referenced(const RingConsumer::Entry& entry, std::string& corrupt) {
  AreaReference reference{};
  if (entry.payload.size() != reference_payload_size) {
    corrupt = fmt::format("a reference entry of {} bytes (not {})", entry.payload.size(), reference_payload_size);
    return nullptr;
  }
  std::memcpy(&reference, entry.payload.data(), sizeof reference);  // read once
  if (!peer_area_) read_socket(corrupt);                            // passed before the first reference: it is there
  if (!corrupt.empty()) return nullptr;
  if (!peer_area_) {
    corrupt = "it referred to its send area before passing it";
    return nullptr;
  }
  const auto bytes = peer_area_->resolve(reference);
  if (!bytes || bytes->size() > inbound_->max_payload()) {
    corrupt = fmt::format("a reference to {} bytes at {} (the area has {}, the most is {})", reference.length,
                          reference.offset, peer_area_->capacity(), inbound_->max_payload());
    return nullptr;
  }
  Buffer* buffer = lender_->lend(*bytes, entry.end, entry.payload.data() + returned_flag_offset);
  if (!area_release_logged_ && lender_->area_released() != 0) {
    area_release_logged_ = true;
    log(LogLevel::warn,
        "shm: the send area {} has had more of its pages read than this side keeps mapped ({} bytes "
        "besides what is lent): the pages given back longest ago are released as others are read (not logged again "
        "for this connection)",
        link_, area_window_);
  }
  return buffer;
}

std::size_t ShmConnection::area_bytes_resident() const noexcept { return lender_->area_resident(); }

void ShmConnection::resume() {
  if (!closed_) pump();
}

void ShmConnection::wake_peer() {
  const std::byte wake{1};
  // A full socket buffer holds wake-ups the peer has not read yet: it will look anyway.
  if (::send(fd_.get(), &wake, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != EPIPE &&
      errno != ECONNRESET) {
    fail(Errc::disconnected,
         fmt::format("shm connection {}: waking the peer failed: {}", link_, posix::errno_text(errno)));
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
  in_flight_.clear();  // the caller's again (the layer above reclaims what did not complete)
  referenced_bytes_ = 0;
}

void ShmConnection::close() noexcept {
  silence();
  if (!fd_) return;
  if (inbound_) inbound_->publish_delivered();  // before the close the peer sees
  fd_.reset();
}

}  // namespace netio::shm
