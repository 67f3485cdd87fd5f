// SPDX-License-Identifier: MIT
// --allow CIDR[,CIDR...] and --key-file FILE: who may connect to a tool's listening side
// (netio/socket_options.hpp), and the pre-shared key both sides prove they hold
// (netio/socket_options.hpp). Bad values are refused at parse time with the parser's message
// (which names the network or the file). Use:
//   add_peer_access_options(app, o.access, /*listens=*/true);
//   ... receive_options.admission = o.access.admission(); send_options.key = o.access.key;
#pragma once

#include "netio/socket_options.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <vector>

namespace netio::tools {

struct PeerAccess {
  std::vector<netio::PeerNetwork> allow;  // empty: everyone
  std::optional<netio::PreSharedKey> key;

  // Default admission limits with the allow-list and the key.
  netio::AdmissionOptions admission() const;
};

// --key-file always; --allow only when the tool listens (`listens`).
void add_peer_access_options(CLI::App& app, PeerAccess& target, bool listens);

}  // namespace netio::tools
