// SPDX-License-Identifier: MIT
#include "pingpong_server.hpp"

#include "common/control_frame.hpp"
#include "common/termination.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace netio::tools {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto tick_period = std::chrono::milliseconds(100);  // how often the loop asks whether to stop
// The main thread's longest sleep: stopping is its wake-up (see serve()); this only bounds a
// loop thread that stopped running altogether.
constexpr auto idle_wait = std::chrono::seconds(10);
constexpr auto connect_back_poll = std::chrono::milliseconds(1);
constexpr auto connect_back_timeout = std::chrono::seconds(5);

// Pings and replies, one at a time per client: the reply window holds that many and more.
constexpr std::size_t reply_window_size = 64;

// A client of the two-connection shape: the connection back to it, for its pongs.
LowLatencySendOptions connect_back_options(const std::optional<PreSharedKey>& key) {
  LowLatencySendOptions options;
  options.key = key;
  options.buffer_count = 64;  // send completions may lag behind the replies; see the client
  options.identity.name = "netio_pingpong server";
  // Closing it (destroyed on the main thread) waits at most this for a client not reading.
  options.send_timeout = std::chrono::seconds(1);
  options.connect_timeout = connect_once;  // the client listens before it asks for this
  return options;
}

// A client being served, known by its connection. Entries are added and removed on the
// main thread inside run_sync() on the loop, and read by the receive callback on the loop
// thread, so the callback needs no lock.
struct Client {
  std::uint64_t session = 0;
  std::unique_ptr<LowLatencySendSocket> back;  // the two-connection shape only
  std::atomic<std::uint64_t> echoed{0};
  std::atomic<std::uint64_t> dropped{0};  // no room to answer: the client will notice
};

class EchoServer {
 public:
  EchoServer(Context& context, const Endpoint& local, const AdmissionOptions& admission)
      : context_(context),
        key_(admission.key),
        socket_(
            context, local, [this](std::span<const std::byte> message, const Peer& peer) { on_message(message, peer); },
            receive_options(admission)) {}

  Endpoint local_endpoint() const { return socket_.local_endpoint(); }

  void serve(const Deadline& deadline, const std::function<bool()>& should_stop) {
    // Whether to stop is asked by a timer on the event-loop thread, which wakes the main
    // thread only then: with --cpu N the main thread shares the loop's core, and a thread
    // woken there every 100 ms preempts a busy-polling loop each time (the round trip under
    // way waits for the switch, up to a scheduler tick). A busy-polling loop runs its timers
    // inline.
    const auto stop = [&] { return stop_requested() || deadline.expired() || (should_stop && should_stop()); };
    const auto stop_timer = context_.loop().add_timer(tick_period, tick_period, [this, &stop] {
      if (stop()) push_stop();
    });
    while (!stopping() && !stop()) {
      // While connections back are being made, look at them often: a welcome waits on them.
      if (auto event = next_event(connecting_back_.empty() ? idle_wait : connect_back_poll)) handle(*event);
      progress_connections_back();
    }
    context_.loop().cancel_timer(stop_timer);  // posted: runs before the run_sync() below
    connecting_back_.clear();
    std::map<ConnectionId, std::unique_ptr<Client>> clients;
    context_.loop().run_sync([&] { clients.swap(clients_); });
  }

 private:
  LowLatencyReceiveOptions receive_options(const AdmissionOptions& admission) {
    LowLatencyReceiveOptions options;
    options.admission = admission;
    options.max_message_size = 64 * 1024 * 1024;
    options.reply_window = reply_window_size;
    // Echoes are as large as the pings; they count against the memory budget while queued,
    // and a client that reads none for the reply timeout is dropped.
    options.admission.max_reply_size = options.max_message_size;
    // A client that leaves without a goodbye is forgotten all the same.
    options.events.on_disconnected = [this](const Peer& peer, const Error&) {
      push({ControlFrame{ControlKind::ping_goodbye, 0, 0, 0}, peer, true});
    };
    return options;
  }

  // Loop thread.
  void on_message(std::span<const std::byte> message, const Peer& peer) {
    if (looks_like_control_frame(message)) {
      if (auto frame = decode_control_frame(message)) {
        push({*frame, peer, false});
      } else {
        fmt::print(stderr, "netio_pingpong: ignoring a malformed control message from {}\n", peer.to_string());
      }
      return;
    }
    const auto it = clients_.find(peer.connection());
    if (it == clients_.end()) return;  // not (or no longer) a client served
    Client& client = *it->second;
    // try_*: on the loop thread nothing may wait for room that only this thread makes.
    try {
      const bool sent = client.back ? client.back->try_send(message) : peer.try_reply(message);
      (sent ? client.echoed : client.dropped).fetch_add(1, std::memory_order_relaxed);
    } catch (const Error&) {
      client.dropped.fetch_add(1, std::memory_order_relaxed);  // the client is gone; reported at goodbye
    }
  }

  struct Event {
    ControlFrame frame;
    Peer peer;
    bool disconnected;
  };

  void push(Event event) {
    {
      std::lock_guard lock(events_mutex_);
      events_.push_back(std::move(event));
    }
    events_changed_.notify_one();
  }

  // Loop thread: wakes the main thread to stop.
  void push_stop() {
    {
      std::lock_guard lock(events_mutex_);
      stopping_ = true;
    }
    events_changed_.notify_one();
  }

  bool stopping() {
    std::lock_guard lock(events_mutex_);
    return stopping_;
  }

  std::optional<Event> next_event(std::chrono::nanoseconds at_most) {
    std::unique_lock lock(events_mutex_);
    events_changed_.wait_for(lock, at_most, [this] { return !events_.empty() || stopping_; });
    if (events_.empty()) return std::nullopt;
    Event event = std::move(events_.front());
    events_.pop_front();
    return event;
  }

  void handle(const Event& event) {
    if (event.disconnected) {
      forget(event.peer.connection());
      return;
    }
    const ControlFrame& f = event.frame;
    switch (f.kind) {
      case ControlKind::ping_hello: welcome(event.peer, static_cast<std::uint16_t>(f.a), f.b, f.c); return;
      case ControlKind::ping_goodbye: goodbye(event.peer, f.a, f.b); return;
      default:
        fmt::print(stderr, "netio_pingpong: ignoring control message kind {} from {}\n",
                   static_cast<std::uint32_t>(f.kind), event.peer.to_string());
    }
  }

  // Answers on the client's own connection, or on the connection back to it, without
  // waiting: false when the client does not take its answers (its window is full).
  static bool answer(const Peer& peer, Client& client, const ControlFrame& frame) {
    const auto bytes = encode_control_frame(frame);
    return client.back ? client.back->try_send(bytes) : peer.try_reply(bytes);
  }

  void welcome(const Peer& peer, std::uint16_t port, std::uint64_t session, std::uint64_t size) {
    auto client = std::make_unique<Client>();
    client->session = session;
    if (port != 0) {
      // The two-connection shape: connect back to the port the client listens on. Nobody
      // waits for that connection: a client naming a port that never answers must not hold
      // up the others (progress_connections_back() welcomes it once connected).
      const Endpoint back = peer.address().with_port(port);
      client->back = std::make_unique<LowLatencySendSocket>(context_, back, connect_back_options(key_));
      connecting_back_.push_back({peer, session, size, std::move(client), Clock::now()});
      return;
    }
    finish_welcome(peer, std::move(client), session, size);
  }

  // Main thread: welcomes the clients whose connection back is up, gives up on those that
  // failed or took longer than connect_back_timeout.
  void progress_connections_back() {
    for (auto it = connecting_back_.begin(); it != connecting_back_.end();) {
      ConnectingBack& c = *it;
      try {
        if (!c.client->back->wait_connected(std::chrono::nanoseconds::zero())) {
          if (Clock::now() - c.since < connect_back_timeout) {
            ++it;
            continue;
          }
          throw Error(Errc::timeout,
                      fmt::format("no connection within {} ms",
                                  std::chrono::duration_cast<std::chrono::milliseconds>(connect_back_timeout).count()));
        }
      } catch (const Error& e) {
        fmt::print(stderr, "netio_pingpong: cannot connect back to the client {} at {}: {}\n", c.peer.to_string(),
                   c.client->back->remote().to_string(), e.what());
        it = connecting_back_.erase(it);
        continue;
      }
      finish_welcome(c.peer, std::move(c.client), c.session, c.size);
      it = connecting_back_.erase(it);
    }
  }

  void finish_welcome(const Peer& peer, std::unique_ptr<Client> client, std::uint64_t session, std::uint64_t size) {
    // Served before it is welcomed: its first ping may follow the welcome at once.
    Client& served = *client;
    const bool two_connections = client->back != nullptr;
    const std::string back = two_connections ? client->back->remote().to_string() : std::string();
    context_.loop().run_sync([&] { clients_[peer.connection()] = std::move(client); });
    try {
      if (!answer(peer, served, {ControlKind::ping_welcome, session, 0, 0})) {
        throw Error(Errc::would_block, "it takes no answers (its reply window is full)");
      }
    } catch (const Error& e) {
      fmt::print(stderr, "netio_pingpong: cannot welcome {}: {}\n", peer.to_string(), e.what());
      forget(peer.connection());
      return;
    }
    fmt::print(stderr, "netio_pingpong: client {} connected ({} B pings, {})\n", peer.to_string(), size,
               two_connections ? "replies on a second connection to " + back : "replies on its connection");
  }

  void goodbye(const Peer& peer, std::uint64_t session, std::uint64_t done) {
    Client* client = nullptr;
    context_.loop().run_sync([&] {
      const auto it = clients_.find(peer.connection());
      if (it != clients_.end() && it->second->session == session) client = it->second.get();
    });
    if (client == nullptr) return;
    try {
      if (!answer(peer, *client, {ControlKind::ping_goodbye_ack, session, 0, 0})) {
        throw Error(Errc::would_block, "it takes no answers (its reply window is full)");
      }
    } catch (const Error& e) {
      fmt::print(stderr, "netio_pingpong: goodbye to {} failed: {}\n", peer.to_string(), e.what());
    }
    fmt::print("client {}: {} measured round trips, {} pings echoed (with warm-up){}\n", peer.to_string(), done,
               client->echoed.load(std::memory_order_relaxed),
               client->dropped.load() > 0 ? fmt::format(", {} dropped", client->dropped.load()) : "");
    std::fflush(stdout);
    forget(peer.connection());
  }

  void forget(ConnectionId connection) {
    std::unique_ptr<Client> client;
    context_.loop().run_sync([&] {
      if (const auto it = clients_.find(connection); it != clients_.end()) {
        client = std::move(it->second);
        clients_.erase(it);
      }
    });
    // Destroyed here, on the main thread, never inside the receive callback.
  }

  // A two-connection client whose connection back is being made. Main thread only.
  struct ConnectingBack {
    Peer peer;
    std::uint64_t session = 0;
    std::uint64_t size = 0;
    std::unique_ptr<Client> client;
    Clock::time_point since;
  };

  Context& context_;
  std::optional<PreSharedKey> key_;  // the connections back to clients authenticate with it too
  std::vector<ConnectingBack> connecting_back_;
  std::map<ConnectionId, std::unique_ptr<Client>> clients_;  // see Client
  std::mutex events_mutex_;
  std::condition_variable events_changed_;
  std::deque<Event> events_;        // guarded by events_mutex_
  bool stopping_ = false;           // guarded by events_mutex_
  LowLatencyReceiveSocket socket_;  // last: destroyed first, so no callback outlives the rest
};

}  // namespace

void run_pingpong_server(Context& context, const Endpoint& local, const Deadline& deadline,
                         const PingpongServerCallbacks& callbacks, const AdmissionOptions& admission) {
  EchoServer server(context, local, admission);
  if (callbacks.on_listening) callbacks.on_listening(server.local_endpoint());
  server.serve(deadline, callbacks.should_stop);
}

}  // namespace netio::tools
