// SPDX-License-Identifier: MIT
/// @file
/// How long a connecting socket waits for its peer to appear (the connect_timeout of
/// LowLatencySendOptions, HighThroughputSendOptions and pubsub::SubscribeOptions).
///
/// Processes of a run start in any order. A send socket (or a subscriber's control
/// connection) whose connection was never up and fails to connect (nobody listens yet, or
/// the network did not answer) tries again in the background, with a fresh connection after
/// a back-off of 10 ms doubling up to 1 s (±25 % jitter), until connect_timeout has passed
/// since the socket was made. Failed attempts are logged at info, rate-limited (the 1st, 2nd,
/// 4th, 8th, ... attempt). Messages sent meanwhile wait in the socket's own buffers (send()
/// blocks up to send_timeout once they are full) and go out, in order, once connected.
/// When connect_timeout passes the connection fails with Errc::timeout, through the paths a
/// refusal took before (send(), wait_connected(), failure(), close's on_closed), naming the
/// receiver, this side's name, the number of attempts and the last attempt's error. A
/// listener's refusal with a reason (not admitted, a wrong key: Errc::handshake_rejected) is
/// not retried, nor is a connection lost after it was up. Closing or destroying a socket
/// whose attempt has failed ends at once, dropping what was queued for it.
#pragma once

#include <chrono>

namespace netio {

/// The default: long enough for run control to start the peer.
inline constexpr std::chrono::nanoseconds default_connect_timeout = std::chrono::seconds(30);
/// Retry without end.
inline constexpr std::chrono::nanoseconds connect_forever = std::chrono::nanoseconds::zero();
/// One attempt only: a refusal fails the connection at once (any negative value).
inline constexpr std::chrono::nanoseconds connect_once = std::chrono::nanoseconds(-1);

}  // namespace netio
