// SPDX-License-Identifier: MIT
// The introduction: the first buffer every user-level send socket sends on a new
// connection, declaring who it is (netio::Identity). The receive socket reads it before any
// message and gives the connection its Peer. Little-endian:
//   u32 magic "NTID" | u8 name length | name | u16 endpoint length | endpoint string ("" : none)
// It travels as data rather than in the hello because the hello must fit a fabric's
// connection data (48 bytes on verbs), and a name does not.
#pragma once

#include "netio/peer.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netio::detail {

constexpr std::uint32_t introduction_magic = 0x4449544E;  // "NTID" in little-endian byte order
constexpr std::size_t max_name_size = 255;
// Receivers take buffers of at least this size, whatever their message limit, so that every
// introduction fits; a user-level limit below it is enforced by the receive socket itself.
constexpr std::size_t max_introduction_size = 512;

// What makes an identity undeclarable, as "its name is ..." (empty when nothing does): an
// empty name, one beyond max_name_size or not printable UTF-8 (netio/printable.hpp), an
// endpoint that is not printable, an introduction beyond max_introduction_size. The sender
// checks before it connects, the receiver again on what arrives (never trusting the sender).
std::string identity_violation(std::string_view name, std::string_view endpoint);
// The identity as sent: an empty name becomes default_name(). Throws netio::Error
// (Errc::message_too_large for a name or endpoint too long, Errc::invalid_option for one not
// printable) saying why.
std::vector<std::byte> encode_introduction(const Identity& identity);
// Throws netio::Error(Errc::protocol_error) saying what is wrong with the bytes, including
// everything identity_violation() refuses.
Identity decode_introduction(std::span<const std::byte> bytes);
// "HOST:PID" of this process.
const std::string& default_name();

}  // namespace netio::detail
