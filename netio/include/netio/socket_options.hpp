// SPDX-License-Identifier: MIT
/// @file
/// The options of every socket, in one place: what a socket's constructor takes (plain
/// aggregates with defaults; copy them freely), and the values they hold — admission
/// control, pre-shared keys, connection events, the connection policy of a send socket to
/// many receivers.
#pragma once

#include "netio/peer.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netio {

class Error;          // netio/error.hpp
class PagePool;       // netio/page_pool.hpp
class ReceiveBudget;  // netio/receive_budget.hpp

// ---- Pre-shared keys
// A pre-shared key for authenticating peers (AdmissionOptions::key on a receive socket,
// the send options' `key` on a send socket). Both sides prove that they hold it with a
// challenge-response in the handshake: each side sends a fresh random nonce, and each
// answers with a keyed BLAKE2b MAC (libsodium's crypto_generichash) over both nonces, so
// an answer recorded from one connection is worth nothing on another. The key itself never
// travels.
//
// Needs netio built with libsodium (NETIO_WITH_SODIUM); without it, a socket given a key
// throws Errc::backend_error saying so (a key is never silently ignored).
//
// Thread-safety: an immutable value; copies may be used from any thread. The bytes are
// wiped when the last copy goes.

class PreSharedKey {
 public:
  static constexpr std::size_t size = 32;
  using Bytes = std::array<std::byte, size>;

  /// A key file holds exactly 64 hexadecimal digits (32 bytes), surrounding white space
  /// allowed; make one with `head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > FILE`
  /// and `chmod 600 FILE`. Throws netio::Error naming the file and what is wrong: missing,
  /// unreadable, readable by group or others, not 64 hexadecimal digits.
  static PreSharedKey from_file(const std::string& path);
  /// The same format from a string; `what` names its origin in errors.
  static PreSharedKey from_hex(std::string_view hex, std::string_view what = "the key");
  explicit PreSharedKey(const Bytes& bytes);

  const Bytes& bytes() const noexcept { return *bytes_; }
  /// Whether this build can authenticate with a key (libsodium).
  static bool supported() noexcept;

 private:
  std::shared_ptr<const Bytes> bytes_;
};

// ---- Admission control
// Admission control: who may connect to a listen socket, and how much a peer may hold
// before it proved it is a netio peer doing useful work.
//
// Every receive socket (LowLatencyReceiveOptions::admission,
// HighThroughputReceiveOptions::admission) takes an AdmissionOptions. The defaults keep a
// listener alive against peers that open connections and hold them (silent, half a frame,
// or idle before their introduction) without getting in the way of DAQ links, which may
// idle for hours: the idle timeout is off unless asked for.
//
// Thread-safety: plain values; copy them freely.

/// An IPv4 or IPv6 network in CIDR notation ("10.0.0.0/8", "::1/128"; an address without
/// a prefix length is the host alone). An IPv4-mapped IPv6 address (::ffff:a.b.c.d) matches
/// the IPv4 networks it belongs to.
class PeerNetwork {
 public:
  /// Throws netio::Error(Errc::invalid_option) naming the string and what is wrong.
  static PeerNetwork parse(std::string_view cidr);
  /// Whether `address` (a numeric IPv4 or IPv6 address, as in Endpoint::host) lies in this
  /// network; false for anything that is not a numeric address.
  bool contains(std::string_view address) const noexcept;
  std::string to_string() const;

 private:
  bool ipv6_ = false;
  std::array<std::uint8_t, 16> bytes_{};  ///< IPv4 in the first 4
  unsigned prefix_ = 0;
};

/// A comma-separated list of networks ("127.0.0.0/8,::1"); throws as PeerNetwork::parse,
/// and for an empty list.
std::vector<PeerNetwork> parse_peer_networks(std::string_view list);

/// Descriptors default_max_connections() leaves to the rest of the process at least.
constexpr std::size_t connection_limit_headroom = 64;
/// The connection limit for the process's soft descriptor limit now (getrlimit(RLIMIT_NOFILE)):
/// 1024, or the limit less a headroom (an eighth of it, at least connection_limit_headroom)
/// when that is smaller, at least 1. So the listener keeps descriptors for the accepts that
/// let a newcomer evict an idle connection, and the process keeps some for everything else.
/// A tcp:// or shm:// connection costs the receiver one descriptor; a libfabric one several
/// (its provider's).
std::size_t default_max_connections() noexcept;
/// AdmissionOptions::max_connections's default: default_max_connections(), read when the
/// receive socket is made.
constexpr std::size_t max_connections_from_descriptors = SIZE_MAX;

struct AdmissionOptions {
  /// Connections accepted at once (introduced or not). A newcomer beyond it evicts the
  /// connection idle longest among those that have sent no data since their introduction
  /// (and did not authenticate with a key), logged; with none of those, it is rejected with a
  /// reason (its send socket's error says so). The same eviction makes room when the process
  /// runs out of descriptors (EMFILE, ENFILE) with a newcomer waiting. 0: no limit. The
  /// default (max_connections_from_descriptors) is default_max_connections() when the receive
  /// socket is made: 1024 unless the process's descriptor limit is lower.
  std::size_t max_connections = max_connections_from_descriptors;
  /// Connections whose handshake (hello, then the sender's introduction and, with a key, its
  /// proof) is not complete yet. When a new one would exceed it, the oldest is dropped: a
  /// flood of silent connections delays new peers by at most this many, it never locks them out.
  /// Well above the listener's accept batch (64), so that a burst of honest peers connecting
  /// at once (a DAQ system starting) is not mistaken for a flood.
  std::size_t max_pending_handshakes = 256;
  /// How long a connection may take for its whole handshake.
  std::chrono::nanoseconds handshake_timeout = std::chrono::seconds(10);
  /// A peer in the middle of a frame (a buffer, a page) that completes no frame for this long
  /// while the receiver is reading is dropped (slowloris). Zero: off. A connection the
  /// receiver itself holds back (every buffer lent out) is never blamed. The libfabric
  /// back-end receives whole messages only (its provider reassembles them), so there the
  /// idle timeout is what catches a stalled peer.
  std::chrono::nanoseconds progress_timeout = std::chrono::seconds(30);
  /// An introduced connection that delivers nothing for this long is dropped. Zero (the
  /// default): off, since DAQ links may idle. A connection held back by a slow consumer
  /// delivers nothing either: set it well above the longest processing stall.
  std::chrono::nanoseconds idle_timeout{0};
  /// The largest reply this receiver sends (Peer::try_reply), whatever its sender declares
  /// it takes (ReplyOptions::max_size, up to 2^64-1 on the wire): the declaration is clamped
  /// to this, and a larger reply throws Errc::message_too_large at the replier. The buffers
  /// of the replies queued to a peer (as many as were queued at once, each as large as the
  /// largest reply it carried) count against the receive socket's memory budget until the
  /// connection ends; a reply that does not fit is refused like one beyond the reply window.
  std::size_t max_reply_size = 64 * 1024;
  /// A peer that takes none of the replies queued to it for this long (its window stays
  /// full, or the budget has no room for more) is dropped, logged once. Zero: never.
  std::chrono::nanoseconds reply_timeout = std::chrono::seconds(30);
  /// When accept() runs out of descriptors (EMFILE, ENFILE) and no connection can be evicted
  /// for the newcomer (none still in its handshake, none idle as above), the listener stops
  /// taking connections for this long, then tries again by itself (logged once per episode).
  std::chrono::nanoseconds accept_backoff = std::chrono::milliseconds(100);
  /// A peer process disconnected for misbehaving (a protocol error: malformed frames, a
  /// shm:// wake-up flood, a bad introduction) is refused for this long when it connects
  /// again, each repeat doubling it (up to 64×); the refusal is answered only when the hold
  /// ends, so a peer that reconnects at once waits rather than keeping the listener busy.
  /// Only where the back-end's peer names one process (shm://: its pid): a TCP or libfabric
  /// peer address is a host that honest processes share. Zero: off.
  std::chrono::nanoseconds misbehaviour_cooldown = std::chrono::seconds(1);
  /// Peers allowed to connect, by source address; empty: everyone. Others are rejected after
  /// their hello, with a reason.
  std::vector<PeerNetwork> allow;
  /// A pre-shared key both sides must hold (challenge-response in the handshake, both ways;
  /// see PreSharedKey above). Unset: no authentication, and a sender that brings a key
  /// is rejected (it would not learn whether its listener is the right one).
  std::optional<PreSharedKey> key;

  /// The connection limit these options set: max_connections, or for
  /// max_connections_from_descriptors, default_max_connections() now.
  std::size_t connection_limit() const noexcept {
    return max_connections == max_connections_from_descriptors ? default_max_connections() : max_connections;
  }
};

// ---- Connection events
// Optional notifications a receive socket gives about its peers. Both run on the
// event-loop thread; keep them short.

struct ConnectionEvents {
  /// A sender connected: its handshake was accepted and it introduced itself (Peer: its
  /// connection id, address and declared identity; it can be answered at once).
  std::function<void(const Peer& peer)> on_connected;
  /// A sender went away: Errc::disconnected when it closed or vanished, Errc::protocol_error
  /// when it was dropped for breaking the protocol (the error says how). Only for senders
  /// that on_connected reported.
  std::function<void(const Peer& peer, const Error& why)> on_disconnected;
};

// ---- Connecting (every send socket, and a subscriber's control connection)

// How long a connecting socket waits for its peer to appear (the connect_timeout of
// LowLatencySendOptions, HighThroughputSendOptions and pubsub::SubscribeOptions).
//
// Processes of a run start in any order. A send socket (or a subscriber's control
// connection) whose connection was never up and fails to connect (nobody listens yet, or
// the network did not answer) tries again in the background, with a fresh connection after
// a back-off of 10 ms doubling up to 1 s (±25 % jitter), until connect_timeout has passed
// since the socket was made. Failed attempts are logged at info, rate-limited (the 1st, 2nd,
// 4th, 8th, ... attempt). Messages sent meanwhile wait in the socket's own buffers (send()
// blocks up to send_timeout once they are full) and go out, in order, once connected.
// When connect_timeout passes the connection fails with Errc::timeout, through the paths a
// refusal took before (send(), wait_connected(), failure(), close's on_closed), naming the
// receiver, this side's name, the number of attempts and the last attempt's error. A
// listener's refusal with a reason (not admitted, a wrong key: Errc::handshake_rejected) is
// not retried, nor is a connection lost after it was up. Closing or destroying a socket
// whose attempt has failed ends at once, dropping what was queued for it.

/// The default: long enough for run control to start the peer.
inline constexpr std::chrono::nanoseconds default_connect_timeout = std::chrono::seconds(30);
/// Retry without end.
inline constexpr std::chrono::nanoseconds connect_forever = std::chrono::nanoseconds::zero();
/// One attempt only: a refusal fails the connection at once (any negative value).
inline constexpr std::chrono::nanoseconds connect_once = std::chrono::nanoseconds(-1);

// ---- Low-latency sockets (netio/low_latency_socket.hpp)

struct LowLatencySendOptions {
  /// Messages in flight at most; send() waits (up to send_timeout) when all are in flight.
  std::size_t buffer_count = 64;
  /// Initial size of each send buffer; a buffer grows to the largest message it carried.
  std::size_t buffer_size = 64 * 1024;
  /// How long send() waits for a free buffer, and how long a close waits for what is queued.
  std::chrono::nanoseconds send_timeout = std::chrono::seconds(10);
  Identity identity;     ///< declared to the receiver (its Peer); default name "HOST:PID"
  ReplyOptions replies;  ///< replies the receiver sends back on this connection
  /// Authenticate with this key: the receiver must hold the same (AdmissionOptions::key), and
  /// each side proves it to the other (PreSharedKey above). Unset: no authentication.
  std::optional<PreSharedKey> key;
  /// A close (close(), the destructor) ends only once the receiver has read everything
  /// sent, not once the back-end handed it to the network: the stream's end goes after the
  /// last message, and the receiver answers it by closing its side. So a new connection to
  /// the same receiver, opened after the close ended, is read after this one's last message
  /// (a receiver whose user holds its buffers stops reading a connection, while a new one
  /// has fresh credits). Costs a round trip per close, and the close waits (up to
  /// send_timeout) for the receiver's user to take what came before the end. A receiver
  /// that closes with messages unread resets the connection: the close then fails
  /// (Errc::disconnected), as what it had not read is lost. POSIX TCP and
  /// the emulated network over it; on libfabric a close ends as without it (sends there
  /// only go into receive buffers posted for them, which the receiver takes by itself).
  bool close_awaits_receiver = false;
  /// How long a connection that was never up is tried again while nobody listens at the
  /// remote end (netio/socket_options.hpp): 0 for ever, connect_once for one attempt.
  std::chrono::nanoseconds connect_timeout = default_connect_timeout;
};

struct LowLatencyReceiveOptions {
  /// Larger messages are refused (the sender learns the limit in the handshake). Back-ends
  /// that pre-post receive buffers (libfabric) reserve credits × this per connection.
  std::size_t max_message_size = 1024 * 1024;
  std::size_t receive_credits = 4;  ///< buffers per connection the back-end may fill ahead
  std::size_t reply_window = 16;    ///< replies per connection queued at most (Peer::try_reply)
  /// Memory this socket holds for its senders at most (netio/receive_budget.hpp): every
  /// connection counts the buffers it holds (at most receive_credits × max_message_size; 64
  /// KiB over TCP until they fill) and its queued replies. Silent peers are evicted for a
  /// newcomer; a sender that still does not fit is given fewer credits, or rejected with the
  /// reason.
  std::size_t memory_budget = std::size_t{1} << 30;
  std::shared_ptr<ReceiveBudget> shared_budget;  ///< counts here instead when set (memory_budget unused)
  ConnectionEvents events;                       ///< optional: senders connecting and going away
  AdmissionOptions admission;                    ///< limits, allowed networks, key (AdmissionOptions above)
};

// ---- High-throughput sockets (netio/high_throughput_socket.hpp)

struct HighThroughputSendOptions {
  /// Bytes per page. Where the back-end sends smaller buffers faster, pages are filled only
  /// that far (libfabric's tcp and sockets providers: 768 KiB; see
  /// LowLevelSendSocket::efficient_buffer_size()); the pool still holds page_size each.
  std::size_t page_size = 1024 * 1024;
  std::size_t page_count = 16;  ///< the pool: memory is page_size × page_count, never more
  std::chrono::nanoseconds flush_timeout = std::chrono::seconds(2);  ///< a partly filled page waits at most this long
  /// send() waits this long for a free page; a close waits this long for what is queued.
  std::chrono::nanoseconds send_timeout = std::chrono::seconds(10);
  /// send() of a message at least this large skips the copy into pages (see below).
  /// std::numeric_limits<std::size_t>::max() turns that off. Unset (the default):
  /// default_zero_copy_threshold, or two pages' capacity (1.5 MiB) where the back-end caps
  /// pages (libfabric's tcp and sockets providers). There every buffer is a message of its
  /// own, so a lent message costs one more, for its length, and a wait for its frames; below
  /// two pages that costs more than the copy.
  std::optional<std::size_t> zero_copy_threshold;
  static constexpr std::size_t default_zero_copy_threshold = 256 * 1024;
  Identity identity;     ///< declared to the receiver (its Peer); default name "HOST:PID"
  ReplyOptions replies;  ///< replies the receiver sends back on this connection (low-latency)
  /// Pages from a pool shared with other sockets instead of a pool of this socket's own:
  /// page_size and page_count above are then the pool's page size and its per-connection
  /// share (PagePool::per_connection()), and the pool bounds the memory of all its sockets.
  std::shared_ptr<PagePool> shared_pages;
  /// Authenticate with this key, as LowLatencySendOptions::key.
  std::optional<PreSharedKey> key;
  /// A close ends only once the receiver has read everything, as
  /// LowLatencySendOptions::close_awaits_receiver.
  bool close_awaits_receiver = false;
  /// As LowLatencySendOptions::connect_timeout (netio/socket_options.hpp).
  std::chrono::nanoseconds connect_timeout = default_connect_timeout;
};

struct HighThroughputReceiveOptions {
  std::size_t max_page_size = 16 * 1024 * 1024;      ///< senders with larger pages are rejected
  std::size_t max_message_size = 256 * 1024 * 1024;  ///< a larger length disconnects the sender
  std::size_t page_credits = 8;                      ///< pages per connection queued at most before reading stalls
  std::size_t reply_window = 16;                     ///< replies per connection queued at most (Peer::try_reply)
  /// Memory this socket holds for its senders at most (netio/receive_budget.hpp): every
  /// connection counts the pages it holds (at most page_credits × its sender's page size; 64
  /// KiB over TCP until they fill) and its queued replies, and messages being reassembled
  /// count as their bytes arrive. Silent peers are evicted for a newcomer; a sender that
  /// still does not fit is given fewer credits, or rejected with the reason.
  std::size_t memory_budget = std::size_t{1} << 30;
  std::shared_ptr<ReceiveBudget> shared_budget;  ///< counts here instead when set (memory_budget unused)
  ConnectionEvents events;                       ///< optional: senders connecting and going away
  AdmissionOptions admission;                    ///< limits, allowed networks, key (AdmissionOptions above)
};

// ---- A send socket to many receivers (netio/multi_destination_send_socket.hpp)

/// How a sender with a connection limit picks the connection to tear down when opening one
/// more would exceed the limit: LRU, and LRU-M of the Advanced Connection Tear-down Schemes
/// (ACTS) for Global Arrays/ARMCI.

enum class ConnectionPolicy {
  /// Least recently used: the open connection whose last message is the oldest.
  lru,
  /// LRU-M: one LRU queue per number of earlier tear-downs of the peer; the victim is the
  /// least recently used connection of the peers torn down the fewest times. A peer that
  /// keeps coming back after being torn down is kept open longer than one met once.
  lru_m,
};

/// "lru" or "lru-m".
std::string_view to_string(ConnectionPolicy policy) noexcept;
/// Parses "lru" or "lru-m" (also "lru_m"); throws netio::Error(Errc::invalid_option)
/// naming the text.
ConnectionPolicy parse_connection_policy(std::string_view text);

/// How messages go to a receiver: one at a time (the low-latency sockets) or packed into
/// pages (the high-throughput sockets). Also a subscription's mode (netio::pubsub::Mode), whose
/// control messages carry these values: they do not change.
enum class SendMode : std::uint8_t {
  low_latency = 1,      ///< each message goes out at once; a callback on the receiver's loop thread
  high_throughput = 2,  ///< messages are packed into pages; the receiver takes them with recv()
};

/// "low-latency" or "high-throughput".
constexpr std::string_view to_string(SendMode mode) noexcept {
  return mode == SendMode::low_latency ? "low-latency" : "high-throughput";
}

struct MultiDestinationSendOptions {
  SendMode mode = SendMode::low_latency;
  /// Open connections at most; 0: no limit (every destination stays open once used).
  std::size_t max_connections = 0;
  ConnectionPolicy policy = ConnectionPolicy::lru;
  /// The options of each connection, by mode. Their send_timeout bounds a close's flush.
  LowLatencySendOptions low_latency;
  HighThroughputSendOptions high_throughput;
  /// How long send() waits in all for a connection (tear-downs of others, re-connects).
  std::chrono::nanoseconds send_timeout = std::chrono::seconds(10);
  /// After a destination failed, sends to it throw the failure at once for this long.
  std::chrono::nanoseconds failed_peer_retry = std::chrono::seconds(1);
  /// Called once per failure of a destination's connection, on the thread that found it
  /// (the loop thread for a failure found while tearing down). Must not call into this socket.
  std::function<void(const Endpoint& peer, const Error& error)> on_peer_failed;
};

}  // namespace netio
