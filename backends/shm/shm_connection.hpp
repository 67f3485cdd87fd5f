// SPDX-License-Identifier: MIT
// One end of a shm:// connection once its segment is mapped: what the send socket and the
// receive socket share. It copies outgoing buffers into its outbound ring (data at the
// sender, replies at the receiver), lends incoming entries in place from its inbound ring
// (at most `credits` at a time: holding them is the back-pressure), and sleeps on the
// connection's Unix socket, which carries nothing but one-byte wake-ups after the
// handshake, and the end: a side that has nothing to do sets its ring's waiting flag, and
// the other side writes a byte only when it finds that flag set (ring.hpp). A busy-polling
// loop (EventLoop::busy_poll() when the connection starts) looks at the rings every round
// instead, and never asks to be woken. A side that answers what came in (a reply, the next
// request) keeps its loop awake for 20 us (EventLoop::stay_awake_until()): an answer that
// comes by then is seen without the thread sleeping and being woken.
//
// The end: the peer's close (or shutdown for writing, or death) shows as the socket's end
// of file; what it wrote before is delivered first, then on_peer_closed runs.
//
// Zero copy: a sender whose buffer lies in its SendArea (its own pool's pages) pushes only
// a reference to it (EntryKind::area_reference), having passed the area's descriptor once
// beside a wake-up byte; the buffer completes when the receiver frees that entry, i.e. when
// it gave the page back. Smaller buffers, and any buffer elsewhere, are copied.
//
// A corrupt index or length read from the segment fails the connection (on_failed with
// Errc::protocol_error and what was wrong), as does a failed wake-up, and a wake-up flood:
// a peer writes a wake-up byte only for a waiting flag this side set, so one that sends
// more than twice as many (and some slack) is not a netio peer. Wake-up bytes are drained
// 64 KiB at a time.
//
// Loop thread only, except that lent buffers may be given back on any thread. Lent buffers
// keep the segment mapped (they hold it) after the connection is gone.
#pragma once

#include "backends/posix/fd_registration.hpp"
#include "backends/posix/socket_fd.hpp"
#include "backends/shm/ring.hpp"
#include "backends/shm/segment.hpp"
#include "backends/shm/send_area.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netio::shm {

class InPlaceLender;

class ShmConnection {
 public:
  struct Callbacks {
    std::function<void(ReceivedBuffer)> on_message;  // an inbound entry, lent in place
    std::function<void(Buffer*)> on_written;         // an outbound buffer is copied, or given back: the caller's again
    std::function<void(Buffer*)> on_sent_in_place;   // an outbound buffer is referenced (on_written follows)
    // The peer's end of file, after everything it sent was delivered: error_number 0 for a
    // close, else the socket's error (ECONNRESET).
    std::function<void(int error_number)> on_peer_closed;
    std::function<void(Errc code, const std::string& why)> on_failed;
  };

  // `inbound_credits` entries of at most `max_inbound` bytes lent at a time. `link` names
  // the connection (both ends) in messages.
  ShmConnection(EventLoop& loop, posix::SocketFd fd, std::shared_ptr<Segment> segment, RingProducer outbound,
                std::optional<RingConsumer> inbound, std::size_t inbound_credits, std::string link);
  ~ShmConnection();
  ShmConnection(const ShmConnection&) = delete;
  ShmConnection& operator=(const ShmConnection&) = delete;

  // The memory this side's buffers may be referenced in instead of copied (the send
  // socket's); before start().
  void use_send_area(std::shared_ptr<SendArea> area) noexcept { area_ = std::move(area); }
  void start(Callbacks callbacks);
  // Queues `buffer` behind the others and copies what fits now.
  void send(Buffer* buffer);
  bool outbound_empty() const noexcept { return queue_.empty(); }
  std::size_t largest_queued() const noexcept;
  // Forgets the queued buffers (the caller's again), in order.
  std::vector<Buffer*> clear_outbound();
  // Shuts the socket for writing: the peer delivers what is in the ring, then sees the end.
  // From then on the peer's close is reported without waiting for the inbound ring to be
  // delivered (the replies of a caller that is not taking them stay where they are).
  bool shut_down_writing(std::string& failure);
  // Every byte this side wrote to its outbound ring was taken by the peer (read after the
  // peer's close: whether it closed with data unread).
  bool peer_took_everything() const noexcept { return outbound_.all_delivered(); }
  // Inbound memory touched so far: the pages of the ring up to the furthest entry this side
  // has read (what the peer filled and published; the layer above charges it as it grows).
  std::size_t bytes_held() const noexcept;
  // Bytes of the peer's send area resident in this side's mapping (pages of it lent, and
  // the ones read most recently, up to twice the inbound credits x the largest entry: see
  // AreaResidency). The layer above charges them as it charges bytes_held().
  std::size_t area_bytes_resident() const noexcept;
  int fd() const noexcept { return fd_.get(); }
  // No callback after this, nothing more read or written; the descriptor stays open (the
  // peer sees the close only at close()). Idempotent.
  void silence() noexcept;
  // silence(), then publishes what was delivered (for the peer's end of stream) and closes
  // the descriptor. Lent buffers stay valid. Idempotent.
  void close() noexcept;

 private:
  void on_events(std::uint32_t events);
  void pump();
  void pump_outbound();
  void pump_inbound();
  bool push(Buffer* buffer, bool& referenced, std::string& corrupt);
  bool pass_area();
  void complete_returned(std::string& corrupt);
  bool any_returned() const noexcept;
  Buffer* lend_referenced(const RingConsumer::Entry& entry, std::string& corrupt);
  // Drains the socket's wake-up bytes (and takes the peer's send area when it comes);
  // notes the peer's end.
  void read_socket(std::string& corrupt);
  // Counts a waiting flag set (whatever the wait returned: the peer may have seen the flag
  // before it was withdrawn), for the wake-ups the peer may send.
  bool announce_wait(bool sleeping) noexcept {
    ++waits_announced_;
    return sleeping;
  }
  void resume();  // a lent entry came back
  void wake_peer();
  void fail(Errc code, const std::string& why);

  EventLoop& loop_;
  posix::SocketFd fd_;
  std::shared_ptr<Segment> segment_;
  RingProducer outbound_;
  std::optional<RingConsumer> inbound_;
  std::shared_ptr<InPlaceLender> lender_;
  std::size_t area_window_;  // of the peer's send area, resident besides what is lent (AreaResidency)
  bool area_release_logged_ = false;
  std::string link_;
  posix::FdRegistration registration_;
  EventLoop::PollerId poller_ = 0;
  Callbacks callbacks_;
  std::deque<Buffer*> queue_;
  std::shared_ptr<SendArea> area_;  // ours, for outbound references
  bool area_passed_ = false;
  struct InFlight {
    std::uint64_t end;  // the reference's ring entry ends here: freed, the buffer is back
    Buffer* buffer;
    std::byte* returned;  // the entry's returned flag: set, the buffer is back
  };
  std::deque<InFlight> in_flight_;       // referenced, not yet given back, oldest first
  std::size_t referenced_bytes_ = 0;     // their sizes
  std::shared_ptr<SendArea> peer_area_;  // the peer's, for inbound references
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  bool busy_poll_ = false;
  bool started_ = false;
  bool closed_ = false;
  bool peer_closed_ = false;
  int peer_error_ = 0;
  bool pumping_ = false;          // pump() is on the stack
  bool writing_ = false;          // pump_outbound() is on the stack
  bool lending_ = false;          // on_message is running (pump_inbound reclaims after it)
  bool inbound_drained_ = false;  // the last look found the inbound ring empty
  bool answering_ = false;        // something came in since the last push
  bool end_reported_ = false;
  bool shut_down_ = false;             // shut_down_writing() ran
  std::uint64_t waits_announced_ = 0;  // waiting flags set: the wake-ups the peer may send
  std::uint64_t wake_ups_read_ = 0;    // wake-up bytes it sent
};

}  // namespace netio::shm
