// SPDX-License-Identifier: MIT
/// @file
/// @ingroup backend
/// The low-level socket interface that every back-end implements (NetIO's send, listen and
/// receive sockets). A back-end only moves buffers: it knows nothing of pages, tags or
/// time-slices. What it guarantees:
///   - a buffer sent is delivered as one unit of exactly its size, in order, reliably, or
///     the connection is reported lost;
///   - a connection starts with a hello (opaque bytes from the connecting side) that the
///     listening side accepts or rejects before any data flows; the accept carries the
///     largest buffer the receiver takes, a reject carries a reason for the connector;
///   - data flows from the send socket to the receive socket; the receive socket may send
///     replies back on the same connection (acknowledgements, credits), as many and as large
///     as the send socket declared it takes before connect() (accept_replies()). Replies are
///     delivered as one unit each, in order, and flow control holds both ways: a send socket
///     that holds its received replies stops reading them, and the replier's replies then wait
///     in its back-end (bounded by the replier's own buffers), never in unbounded memory.
///
/// Threading: every method must be called on the event-loop thread, and every callback runs
/// there. A callback may call close() on its own socket but must not destroy it; destroy
/// sockets from a later loop task (or after close() from the loop thread).
///
/// The contract every back-end keeps (netio's test suite checks it on each built-in one):
///   - completions in FIFO order: on_send_completed reports buffers in the order send()
///     took them, whatever their sizes (0 bytes included); a buffer sent from send_memory()
///     is reported in that order by on_sent_in_place, and by on_send_completed later, in
///     any order, when the receiver is done with it;
///   - no callback after close(): once close() returns, no callback of that socket runs,
///     whether close() was called from inside a callback or from a later task, and however
///     much the peer still sends;
///   - send() never throws: a buffer it cannot send (larger than the peer's
///     max_buffer_size, memory it cannot register) fails the connection through
///     on_disconnected with that error, possibly from inside send(); the socket is then
///     closed and the buffers it held are the caller's again, as after close().
///
/// Errors: what is wrong with a connect() request itself throws netio::Error from the call
/// (resolve_failed, provider_unavailable, a hello the transport cannot carry). What happens
/// on the network arrives through callbacks (refused, rejected, disconnected, protocol
/// errors). After close() or a failure, send() ignores the buffer.
///
/// Back-ends are found by scheme through the registry (netio/backend/registry.hpp).
///
/// The hello travels as connection data on some transports (libfabric CM data: as little as
/// 48 bytes on verbs): keep it at most max_hello_size bytes.
///
/// Ownership: send buffers belong to the caller; the back-end borrows a buffer from send()
/// until on_send_completed (after which the caller may reuse it) or until close() (a buffer
/// sent in place may still be read by the receiver then: its memory must stay mapped).
/// Receive buffers belong to the back-end and are lent to the caller as a ReceivedBuffer,
/// which gives them back when destroyed (on any thread).
#pragma once

#include "netio/backend/buffer.hpp"
#include "netio/endpoint.hpp"
#include "netio/error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace netio {

class EventLoop;

/// 48 bytes of verbs connection data, less the libfabric back-end's header and reply window.
constexpr std::size_t max_hello_size = 36;
/// The most an accept carries back to the connector besides the back-end's own fields.
constexpr std::size_t max_accept_data_size = 32;

/// Where received buffers go back to. Thread-safe: give_back() may be called on any thread.
class ReceiveBufferOwner {
 public:
  virtual ~ReceiveBufferOwner() = default;
  virtual void give_back(Buffer* buffer) noexcept = 0;
};

/// A received buffer on loan from the back-end: move-only; destroying it (or reset())
/// returns the memory. Keeping it alive keeps the memory valid; holding many stalls the
/// connection (the back-end stops receiving), which is how back-pressure reaches the sender.
class ReceivedBuffer {
 public:
  ReceivedBuffer() = default;
  ReceivedBuffer(Buffer* buffer, std::shared_ptr<ReceiveBufferOwner> owner) noexcept
      : buffer_(buffer), owner_(std::move(owner)) {}
  ReceivedBuffer(ReceivedBuffer&& other) noexcept
      : buffer_(std::exchange(other.buffer_, nullptr)), owner_(std::move(other.owner_)) {}
  ReceivedBuffer& operator=(ReceivedBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      buffer_ = std::exchange(other.buffer_, nullptr);
      owner_ = std::move(other.owner_);
    }
    return *this;
  }
  ReceivedBuffer(const ReceivedBuffer&) = delete;
  ReceivedBuffer& operator=(const ReceivedBuffer&) = delete;
  ~ReceivedBuffer() { reset(); }

  void reset() noexcept {
    if (buffer_ != nullptr) owner_->give_back(std::exchange(buffer_, nullptr));
    owner_.reset();
  }
  explicit operator bool() const noexcept { return buffer_ != nullptr; }
  std::span<const std::byte> bytes() const noexcept {
    return buffer_ ? std::span<const std::byte>(buffer_->data, buffer_->size) : std::span<const std::byte>();
  }
  /// The rest of the buffer after bytes(): the holder's to write (the back-end does not touch
  /// a buffer while it is lent), e.g. to join a message that continues in the next buffer.
  std::span<std::byte> spare() noexcept {
    return buffer_ ? std::span<std::byte>(buffer_->data + buffer_->size, buffer_->capacity - buffer_->size)
                   : std::span<std::byte>();
  }

 private:
  Buffer* buffer_ = nullptr;
  std::shared_ptr<ReceiveBufferOwner> owner_;
};

/// What a send socket takes as replies: each at most max_size bytes, at most `credits`
/// received and not yet given back (a ReceivedBuffer held by the caller) before the
/// connection stops taking more. Zero max_size: no replies (a reply is a protocol error).
struct ReplyWindow {
  std::size_t max_size = 0;
  std::size_t credits = 0;
};

/// What the connecting side learns when the listener accepts.
struct ConnectionInfo {
  Endpoint peer;                         ///< the address connected to
  std::size_t peer_max_buffer_size = 0;  ///< send no buffer larger than this
  std::vector<std::byte> accept_data{};  ///< AcceptDecision::accept_data of the listener
};

class LowLevelSendSocket {
 public:
  struct Callbacks {
    std::function<void(const ConnectionInfo&)> on_connected;
    std::function<void(const Error&)> on_connect_failed;  ///< refused, rejected (with reason), unreachable
    std::function<void(const Error&)> on_disconnected;    ///< after on_connected only
    std::function<void(Buffer*)> on_send_completed;       ///< the buffer may be reused
    /// A buffer from send_memory() is sent (this counts as its completion, in FIFO order),
    /// but its memory stays the receiver's until on_send_completed reports it again.
    std::function<void(Buffer*)> on_sent_in_place;
    /// A reply from the receive socket, in the order sent. Holding it holds a reply credit.
    std::function<void(ReceivedBuffer)> on_reply;
  };

  virtual ~LowLevelSendSocket() = default;
  /// Declares the replies this socket takes (default: none). Before connect() only.
  virtual void accept_replies(ReplyWindow window) = 0;
  /// Starts connecting; the result arrives through the callbacks. `hello` is copied.
  virtual void connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) = 0;
  /// Queues `buffer` (buffer->size bytes) for sending. Only after on_connected. Buffers
  /// complete in the order sent. Never blocks: the back-end queues what it cannot send yet.
  virtual void send(Buffer* buffer) = 0;
  /// Registration for buffers this socket sends; nullptr when the back-end needs none.
  /// Best asked after connect(), when the back-end knows which device the connection uses.
  virtual MemoryRegistrar* registrar() noexcept = 0;
  /// Whether send() takes memory nobody registered (plain memory the caller lends until
  /// on_send_completed), so that large messages can go out without a copy. Known once
  /// on_connected has run (a libfabric provider needing FI_MR_LOCAL says no).
  virtual bool sends_unregistered_memory() const noexcept = 0;
  /// Memory this socket sends from without copying it (shm://: a segment its receiver maps
  /// and reads in place), for the pool of the socket's own buffers; nullptr (the default)
  /// where every buffer is moved alike. A buffer sent from it is reported twice: sent
  /// (Callbacks::on_sent_in_place, in order with the other completions), then the caller's
  /// again (on_send_completed) once the receiver is done with it. Asked once, when the
  /// socket's pool is made; shared, so that the pool may keep it beyond the socket.
  virtual std::shared_ptr<BufferMemory> send_memory() noexcept { return nullptr; }
  /// Sends from `memory` (an earlier socket's send_memory() of the same back-end) instead of
  /// memory of its own: a connection made again after a failed attempt, whose pool was made
  /// from the first socket's memory, so that its buffers still go without a copy. Called
  /// before connect(); memory a socket cannot send from is ignored (it then copies).
  virtual void use_send_memory(std::shared_ptr<BufferMemory> memory) noexcept { (void)memory; }
  /// The largest buffer this connection sends at full speed: larger ones are sent as well,
  /// only slower (a libfabric provider over kernel TCP writes each buffer with one system
  /// call, and Linux slows down calls past 16 skbs). Senders free to choose their buffer
  /// sizes, such as high-throughput pages, stay under it. std::numeric_limits<std::size_t>::max()
  /// when there is no such limit. Known after connect().
  virtual std::size_t efficient_buffer_size() const noexcept = 0;
  /// Ends the stream, for a close that must know the receiver read everything: a send
  /// completion says only that the back-end handed the buffer on, and over kernel TCP the
  /// receiver may not have read it yet (a receiver that holds its buffers stops reading).
  /// Call it connected, after every buffer sent has completed; send() afterwards is ignored.
  /// The receive socket delivers every buffer, then reports the end (on_disconnected,
  /// Errc::disconnected) and is closed by its owner; this socket then reports
  /// on_disconnected once the receiver has closed its side: with Errc::disconnected when the
  /// receiver closed it after reading everything, with another code (the system error, as
  /// ECONNRESET) when it reset the connection, i.e. closed it with bytes unread or vanished.
  /// Returns false (and does nothing) where the back-end has no such end; a caller then
  /// closes as usual.
  virtual bool end_stream() { return false; }
  /// Closes the connection. Buffers not yet completed are dropped (the caller owns them
  /// again); no callback runs after close() returns. Idempotent.
  virtual void close() noexcept = 0;
};

class LowLevelReceiveSocket {
 public:
  struct Callbacks {
    std::function<void(ReceivedBuffer)> on_data;
    std::function<void(const Error&)> on_disconnected;  ///< code Errc::disconnected for a clean close
    std::function<void(Buffer*)> on_reply_completed;    ///< a reply's buffer may be reused
  };

  virtual ~LowLevelReceiveSocket() = default;
  /// Starts delivering; called once, right after on_accepted hands the socket over.
  virtual void start(Callbacks callbacks) = 0;
  virtual const Endpoint& peer() const noexcept = 0;
  /// Bytes this connection holds for received data now: the receive buffers allocated (or,
  /// for posted buffers, the pages messages have written) and any staging. Grows as buffers
  /// are first filled, never beyond credits × the largest buffer plus the staging. Loop thread.
  virtual std::size_t bytes_held() const noexcept { return 0; }
  /// The largest reply sent on this connection: what the sender takes (its
  /// ReplyWindow::max_size; 0: it takes none), at most the AcceptDecision's max_reply_size.
  virtual std::size_t max_reply_size() const noexcept = 0;
  /// Registration for reply buffers; nullptr when the back-end needs none.
  virtual MemoryRegistrar* reply_registrar() noexcept = 0;
  /// Queues `buffer` (buffer->size bytes, at most max_reply_size()) as a reply to the sender,
  /// after the replies before it. Only after start(). Never blocks and never throws: replies
  /// wait in the back-end while the sender takes none (its window is full), and complete
  /// through on_reply_completed in the order sent. A reply beyond max_reply_size() fails the
  /// connection (on_disconnected, Errc::message_too_large). The caller bounds how many it
  /// queues. After close() or a failure the buffer is ignored (the caller owns it again).
  virtual void send_reply(Buffer* buffer) = 0;
  /// No callback runs after close() returns. Buffers already lent out stay valid; replies
  /// not yet completed are dropped (the caller owns them again). Idempotent.
  virtual void close() noexcept = 0;
};

/// The listener's answer to a connection request.
struct AcceptDecision {
  static AcceptDecision accept(std::size_t max_buffer_size, std::size_t receive_credits) {
    return {true, {}, max_buffer_size, receive_credits, {}, SIZE_MAX, {}};
  }
  static AcceptDecision reject(std::string reason) { return {false, std::move(reason), 0, 0, {}, 0, {}}; }

  bool accepted = false;
  std::string reject_reason;        ///< sent to the connecting side
  std::size_t max_buffer_size = 0;  ///< larger buffers are a protocol error
  std::size_t receive_credits = 0;  ///< receive buffers lent out at most before reading stalls
  /// Opaque bytes for the connector (ConnectionInfo::accept_data), at most
  /// max_accept_data_size: the listener's side of a challenge-response.
  std::vector<std::byte> accept_data{};
  /// The largest reply the listener's side will send: the sender's declaration (its
  /// ReplyWindow::max_size) is clamped to it, and the receive socket's max_reply_size() and
  /// every buffer the back-end sets aside for replies follow the smaller of the two.
  std::size_t max_reply_size = SIZE_MAX;
  /// A rejection the listener answers only after this long, holding the connection meanwhile
  /// (at most ListenLimits::max_pending_handshakes held at once: a newer one beyond that
  /// closes the oldest unanswered). For a peer that reconnects at once after every refusal:
  /// the refusal itself is cheap, so answering at once only speeds its loop up; held, its loop
  /// waits. Zero: answered at once. Back-ends that cannot hold a connection answer at once.
  std::chrono::nanoseconds answer_after{0};

  /// The largest reply sent to a sender that declared it takes `declared` bytes (what
  /// LowLevelReceiveSocket::max_reply_size() returns): the smaller of the two.
  std::size_t reply_size_for(std::uint64_t declared) const noexcept {
    return declared < max_reply_size ? static_cast<std::size_t>(declared) : max_reply_size;
  }
};

/// What a listen socket bounds by itself, before the layer above sees a connection
/// (netio::AdmissionOptions carries them for users; zero durations: off).
struct ListenLimits {
  /// Connections accepted whose hello has not arrived yet; a new one beyond this drops the oldest.
  std::size_t max_pending_handshakes = 256;
  std::chrono::nanoseconds handshake_timeout = std::chrono::seconds(10);  ///< for the hello
  /// A receive socket in the middle of a buffer that completes none for this long, while it
  /// is reading, fails with Errc::protocol_error (where the back-end sees partial buffers).
  std::chrono::nanoseconds progress_timeout = std::chrono::seconds(30);
  /// Out of descriptors with nothing to drop (Callbacks::on_out_of_descriptors closed
  /// nothing): how long the listener stops accepting before it tries again.
  std::chrono::nanoseconds accept_backoff = std::chrono::milliseconds(100);
  /// Bytes of AcceptDecision::accept_data that accepted connections carry (the answer to a
  /// pre-shared key's challenge; at most max_accept_data_size; 0: none). listen() throws when
  /// the back-end cannot carry them in its accept, rather than cutting them short.
  std::size_t accept_data_size = 0;
};

class LowLevelListenSocket {
 public:
  struct Callbacks {
    std::function<AcceptDecision(const Endpoint& peer, std::span<const std::byte> hello)> on_request;
    std::function<void(std::unique_ptr<LowLevelReceiveSocket>)> on_accepted;
    std::function<void(const Error&)> on_error;  ///< a failed accept; the listener keeps listening
    /// Out of descriptors (EMFILE, ENFILE) with a peer waiting to be accepted, and nothing of
    /// the listener's own to drop: the layer above may close one of the connections it was
    /// handed (an idle one) to make room. Returns whether it closed one, whose descriptor is
    /// free when it returns; the listener then accepts again at once, else it backs off.
    std::function<bool()> on_out_of_descriptors;
  };

  virtual ~LowLevelListenSocket() = default;
  /// Binds and listens within `limits`; throws netio::Error if the address cannot be bound.
  virtual void listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) = 0;
  void listen(const Endpoint& local, Callbacks callbacks) { listen(local, std::move(callbacks), ListenLimits{}); }
  /// The bound address, with the real port when listen() was given port 0.
  virtual Endpoint local_endpoint() const = 0;
  /// Connections on_request accepted that are not handed over yet (on_accepted not called:
  /// libfabric's FI_CONNECTED not seen). They count against the layer above's limits
  /// (max_connections) like the connections it holds. 0 where accepting hands over at once.
  virtual std::size_t establishing() const noexcept { return 0; }
  /// Whether accepting a connection makes its receive buffers hold memory at once (credits ×
  /// the largest buffer: libfabric on a provider that pins what is posted, verbs), rather
  /// than as bytes arrive (TCP; libfabric's posted buffers, backed as they are written). The
  /// layer above charges its memory budget accordingly: up front, or as the receive socket's
  /// bytes_held() grows.
  virtual bool allocates_receive_buffers_up_front() const noexcept { return false; }
  /// Whether the peer endpoints this listener hands to on_request name one process (shm://:
  /// its pid), rather than an address many processes share (a TCP or libfabric host): the
  /// layer above may then hold what one connection did against that peer's next ones.
  virtual bool peers_are_processes() const noexcept { return false; }
  /// Stops accepting; receive sockets already handed out live on. Idempotent.
  virtual void close() noexcept = 0;
};

/// A back-end: makes the three sockets, all bound to one event loop.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::unique_ptr<LowLevelSendSocket> make_send_socket() = 0;
  virtual std::unique_ptr<LowLevelListenSocket> make_listen_socket() = 0;
};

}  // namespace netio
