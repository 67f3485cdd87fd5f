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
#include <vector>

namespace netio::detail {

constexpr std::uint32_t introduction_magic = 0x4449544E;  // "NTID" in little-endian byte order
constexpr std::size_t max_name_size = 255;
// Receivers take buffers of at least this size, whatever their message limit, so that every
// introduction fits; a user-level limit below it is enforced by the receive socket itself.
constexpr std::size_t max_introduction_size = 512;

// The identity as sent: an empty name becomes default_name(). Throws netio::Error
// (Errc::message_too_large) for a name beyond max_name_size or an endpoint too long.
std::vector<std::byte> encode_introduction(const Identity& identity);
// Throws netio::Error(Errc::protocol_error) saying what is wrong with the bytes.
Identity decode_introduction(std::span<const std::byte> bytes);
// "HOST:PID" of this process.
const std::string& default_name();

}  // namespace netio::detail
