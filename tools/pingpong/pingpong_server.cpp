#include "pingpong_server.hpp"

#include "common/control_frame.hpp"
#include "common/termination.hpp"

#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

namespace netio::tools {
namespace {

constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kConnectBackTimeout = std::chrono::seconds(5);

// One ping is in flight at a time, plus a control message: a few buffers are plenty, and
// they grow to the ping size on first use (during the client's warm-up).
LowLatencySendOptions pingpong_send_options() {
  LowLatencySendOptions options;
  options.buffer_count = 64;  // send completions may lag behind the replies; see the client
  return options;
}

struct ControlEvent {
  ControlFrame frame;
  Endpoint peer;
};

// The client being served. `socket` and `peer` are read by the receive callback on the
// loop thread and replaced only inside run_sync() on the loop, so the callback needs no
// lock; the main thread may use the socket (send is thread-safe) between replacements.
struct CurrentClient {
  std::unique_ptr<LowLatencySendSocket> socket;
  Endpoint peer;  // the connection the pings come from
  std::uint64_t session = 0;
  std::atomic<std::uint64_t> echoed{0};
  std::atomic<std::uint64_t> dropped{0};  // no free send buffer: the client will notice
};

class EchoServer {
 public:
  EchoServer(Context& context, const Endpoint& local)
      : context_(context),
        socket_(context, local, [this](std::span<const std::byte> message, const Endpoint& peer) {
          on_message(message, peer);
        }) {}

  Endpoint local_endpoint() const { return socket_.local_endpoint(); }

  void serve(const Deadline& deadline) {
    while (!stop_requested() && !deadline.expired()) {
      if (auto event = next_event()) handle(*event);
    }
    drop_client();
  }

 private:
  // Loop thread.
  void on_message(std::span<const std::byte> message, const Endpoint& peer) {
    if (looks_like_control_frame(message)) {
      if (auto frame = decode_control_frame(message)) {
        {
          std::lock_guard lock(events_mutex_);
          events_.push_back({*frame, peer});
        }
        events_changed_.notify_one();
      } else {
        fmt::print(stderr, "netio_pingpong: ignoring a malformed control message from {}\n", peer.to_string());
      }
      return;
    }
    if (!client_.socket || peer != client_.peer) return;  // not (or no longer) the client served
    // try_send: on the loop thread a blocking send() would wait for completions that only
    // this very thread can deliver.
    try {
      if (client_.socket->try_send(message)) {
        client_.echoed.fetch_add(1, std::memory_order_relaxed);
      } else {
        client_.dropped.fetch_add(1, std::memory_order_relaxed);
      }
    } catch (const Error&) {
      client_.dropped.fetch_add(1, std::memory_order_relaxed);  // the client is gone; reported at goodbye
    }
  }

  std::optional<ControlEvent> next_event() {
    std::unique_lock lock(events_mutex_);
    events_changed_.wait_for(lock, kTick, [this] { return !events_.empty(); });
    if (events_.empty()) return std::nullopt;
    ControlEvent event = events_.front();
    events_.pop_front();
    return event;
  }

  void handle(const ControlEvent& event) {
    const ControlFrame& f = event.frame;
    switch (f.kind) {
      case ControlKind::ping_hello:
        welcome(event.peer, static_cast<std::uint16_t>(f.a), f.b, f.c);
        return;
      case ControlKind::ping_goodbye:
        goodbye(event.peer, f.a, f.b);
        return;
      default:
        fmt::print(stderr, "netio_pingpong: ignoring control message kind {} from {}\n",
                   static_cast<std::uint32_t>(f.kind), event.peer.to_string());
    }
  }

  void welcome(const Endpoint& peer, std::uint16_t port, std::uint64_t session, std::uint64_t size) {
    const Endpoint back = peer.with_port(port);
    auto socket = std::make_unique<LowLatencySendSocket>(context_, back, pingpong_send_options());
    try {
      socket->wait_connected(kConnectBackTimeout);
    } catch (const Error& e) {
      fmt::print(stderr, "netio_pingpong: cannot connect back to the client at {}: {}\n", back.to_string(), e.what());
      return;
    }
    replace_client(std::move(socket), peer, session);
    client_.socket->send(encode_control_frame({ControlKind::ping_welcome, session, 0, 0}));
    fmt::print(stderr, "netio_pingpong: client {} connected ({} B pings, replies to {})\n", peer.to_string(), size,
               back.to_string());
  }

  void goodbye(const Endpoint& peer, std::uint64_t session, std::uint64_t done) {
    if (!client_.socket || peer != client_.peer || session != client_.session) return;
    try {
      client_.socket->send(encode_control_frame({ControlKind::ping_goodbye_ack, session, 0, 0}));
      client_.socket->wait_sent(std::chrono::seconds(1));
    } catch (const Error& e) {
      fmt::print(stderr, "netio_pingpong: goodbye to {} failed: {}\n", peer.to_string(), e.what());
    }
    fmt::print("client {}: {} measured round trips, {} pings echoed (with warm-up){}\n", peer.to_string(), done,
               client_.echoed.load(std::memory_order_relaxed),
               client_.dropped.load() > 0 ? fmt::format(", {} dropped", client_.dropped.load()) : "");
    std::fflush(stdout);
    drop_client();
  }

  void replace_client(std::unique_ptr<LowLatencySendSocket> socket, const Endpoint& peer, std::uint64_t session) {
    std::unique_ptr<LowLatencySendSocket> previous;
    context_.loop().run_sync([&] {
      previous = std::exchange(client_.socket, std::move(socket));
      client_.peer = peer;
      client_.session = session;
      client_.echoed.store(0, std::memory_order_relaxed);
      client_.dropped.store(0, std::memory_order_relaxed);
    });
    // Destroyed here, on the main thread, never inside the receive callback.
  }

  void drop_client() { replace_client(nullptr, Endpoint{}, 0); }

  Context& context_;
  CurrentClient client_;
  std::mutex events_mutex_;
  std::condition_variable events_changed_;
  std::deque<ControlEvent> events_;  // guarded by events_mutex_
  LowLatencyReceiveSocket socket_;   // last: destroyed first, so no callback outlives the rest
};

}  // namespace

void run_pingpong_server(Context& context, const Endpoint& local, const Deadline& deadline,
                         const PingpongServerCallbacks& callbacks) {
  EchoServer server(context, local);
  if (callbacks.on_listening) callbacks.on_listening(server.local_endpoint());
  server.serve(deadline);
}

}  // namespace netio::tools
