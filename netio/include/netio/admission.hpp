// SPDX-License-Identifier: MIT
/// @file
/// Admission control: who may connect to a listen socket, and how much a peer may hold
/// before it proved it is a netio peer doing useful work.
///
/// Every receive socket (LowLatencyReceiveOptions::admission,
/// HighThroughputReceiveOptions::admission) takes an AdmissionOptions. The defaults keep a
/// listener alive against peers that open connections and hold them (silent, half a frame,
/// or idle before their introduction) without getting in the way of DAQ links, which may
/// idle for hours: the idle timeout is off unless asked for.
///
/// Thread-safety: plain values; copy them freely.
#pragma once

#include "netio/preshared_key.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netio {

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
  /// Peers allowed to connect, by source address; empty: everyone. Others are rejected after
  /// their hello, with a reason.
  std::vector<PeerNetwork> allow;
  /// A pre-shared key both sides must hold (challenge-response in the handshake, both ways;
  /// see netio/preshared_key.hpp). Unset: no authentication, and a sender that brings a key
  /// is rejected (it would not learn whether its listener is the right one).
  std::optional<PreSharedKey> key;

  /// The connection limit these options set: max_connections, or for
  /// max_connections_from_descriptors, default_max_connections() now.
  std::size_t connection_limit() const noexcept {
    return max_connections == max_connections_from_descriptors ? default_max_connections() : max_connections;
  }
};

}  // namespace netio
