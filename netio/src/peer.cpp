// SPDX-License-Identifier: MIT
#include "netio/peer.hpp"

#include "netio/printable.hpp"
#include "peer_state.hpp"

#include <fmt/format.h>

#include <atomic>

namespace netio {
namespace {
const Endpoint no_address{};
const Identity no_identity{};
}  // namespace

ConnectionId detail::next_connection_id() noexcept {
  static std::atomic<ConnectionId> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

ConnectionId Peer::connection() const noexcept { return state_ ? state_->connection : 0; }
const Endpoint& Peer::address() const noexcept { return state_ ? state_->address : no_address; }
const Identity& Peer::identity() const noexcept { return state_ ? state_->identity : no_identity; }

std::string Peer::to_string() const {
  if (!state_) return "(no peer)";
  return fmt::format("{} ({})", printable(state_->identity.name), printable(state_->address.to_string()));
}

bool Peer::try_reply(std::span<const std::byte> message) const {
  if (!state_) throw Error(Errc::invalid_option, "try_reply() on an empty Peer");
  return state_->replies->send(message, false, {});
}

void Peer::reply(std::span<const std::byte> message, std::chrono::nanoseconds timeout) const {
  if (!state_) throw Error(Errc::invalid_option, "reply() on an empty Peer");
  state_->replies->send(message, true, timeout);
}

}  // namespace netio
