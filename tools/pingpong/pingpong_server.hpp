// SPDX-License-Identifier: MIT
// netio_pingpong --server: echoes the pings of any number of clients at once, each on its own
// connection, until Ctrl-C / SIGTERM or --timeout. Protocol: common/pingpong_protocol.hpp.
#pragma once

#include "common/deadline.hpp"

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/socket_options.hpp"

#include <functional>

namespace netio::tools {

struct PingpongServerCallbacks {
  std::function<void(const Endpoint&)> on_listening;  // the bound endpoint (real port)
  // Asked every 100 ms on the Context's event-loop thread (and between events on the
  // caller's): true stops the server as a signal does.
  std::function<bool()> should_stop;
};

// Returns when stopped by a signal, should_stop or the deadline; throws netio::Error when the endpoint
// cannot be bound. Problems with one client are printed and do not stop the server.
// `admission`: who may connect (--allow, --key-file); the key also authenticates the
// connections back to two-connection clients.
void run_pingpong_server(Context& context, const Endpoint& local, const Deadline& deadline,
                         const PingpongServerCallbacks& callbacks, const AdmissionOptions& admission = {});

}  // namespace netio::tools
