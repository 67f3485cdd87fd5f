// SPDX-License-Identifier: MIT
#include "pingpong_client.hpp"

#include "common/control_frame.hpp"
#include "common/pingpong_protocol.hpp"
#include "common/termination.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/error.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

namespace netio::tools {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto tick_period = std::chrono::milliseconds(100);  // how often the loop looks for the run's end
constexpr auto goodbye_timeout = std::chrono::seconds(1);
constexpr auto poll = std::chrono::milliseconds(5);

bool is_loopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

// The ping-pong itself runs on the event-loop thread: each reply's callback takes the time,
// records it and sends the next ping from there (straight to the back-end, no thread
// switch). So does the watch for the other ends of a run (see Watch): the main thread
// only starts it, sleeps until it has ended and collects the result.
class PingLoop {
 public:
  PingLoop(const PingpongClientOptions& options, std::uint64_t session)
      : options_(options), session_(session), ping_(options.size) {
    samples_.reserve(std::min<std::uint64_t>(options.iterations, std::uint64_t{1} << 24));
  }

  void attach(LowLatencySendSocket& socket) { socket_ = &socket; }

  // Loop thread: every message from the server.
  void on_message(std::span<const std::byte> message) {
    if (looks_like_control_frame(message)) {
      on_control(message);
      return;
    }
    if (!pinging_.load(std::memory_order_relaxed)) return;
    const auto now = Clock::now();
    if (!ping_.is_echo_of(message, sequence_)) {
      fail(fmt::format("reply {} is not the echo of ping {} ({} B instead of {} B, or other bytes)", sequence_,
                       sequence_, message.size(), ping_.size()));
      return;
    }
    if (sequence_ >= options_.warmup)
      samples_.push_back(std::chrono::duration<double, std::micro>(now - sent_at_).count());
    ++sequence_;
    progress_.store(sequence_, std::memory_order_relaxed);
    if (sequence_ == options_.warmup + options_.iterations) {
      finish();
      return;
    }
    send_ping();
  }

  // Loop thread (posted by the main thread): the first ping.
  void start() {
    pinging_.store(true, std::memory_order_relaxed);
    send_ping();
  }

  // Main thread: stops the loop; after the next loop round trip no callback touches the
  // samples any more.
  void stop(Context& context) {
    pinging_.store(false, std::memory_order_relaxed);
    context.loop().run_sync([] {});
  }

  // Loop thread: ends the run early, for a signal or the deadline (`why` empty) or a failure;
  // nothing once the last reply has come.
  void end_early(std::optional<std::string> why) {
    pinging_.store(false, std::memory_order_relaxed);
    set([&] {
      if (finished_) return;
      if (why) {
        error_ = std::move(*why);
      } else {
        interrupted_ = true;
      }
      finished_ = true;
    });
  }

  // Main thread: waits up to `timeout` for `what` (welcome, finished, goodbye acknowledged).
  enum class Milestone { welcomed, finished, goodbye_acknowledged };
  bool wait_for(Milestone what, std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return reached(what); });
  }

  std::uint64_t progress() const noexcept { return progress_.load(std::memory_order_relaxed); }
  std::uint64_t session() const noexcept { return session_; }
  // Main thread, after stop() or finished.
  std::vector<double> take_samples() { return std::move(samples_); }
  std::optional<std::string> error() {
    std::lock_guard lock(mutex_);
    return error_;
  }
  bool interrupted() {
    std::lock_guard lock(mutex_);
    return interrupted_;
  }

 private:
  void send_ping() {
    sent_at_ = Clock::now();
    try {
      // try_send: a blocking send() on the loop thread would wait for completions only
      // this thread can deliver. One ping is in flight at a time, so a buffer is free.
      if (!socket_->try_send(ping_.stamp(sequence_))) fail("no free send buffer for the next ping");
    } catch (const Error& e) {
      fail(e.what());
    }
  }

  void on_control(std::span<const std::byte> message) {
    const auto frame = decode_control_frame(message);
    if (!frame || frame->a != session_) return;
    if (frame->kind == ControlKind::ping_welcome) set([this] { welcomed_ = true; });
    if (frame->kind == ControlKind::ping_goodbye_ack) set([this] { acknowledged_ = true; });
  }

  void fail(std::string why) {
    pinging_.store(false, std::memory_order_relaxed);
    set([&] {
      error_ = std::move(why);
      finished_ = true;
    });
  }

  void finish() {
    pinging_.store(false, std::memory_order_relaxed);
    set([this] { finished_ = true; });
  }

  template <typename F>
  void set(F&& change) {
    {
      std::lock_guard lock(mutex_);
      change();
    }
    changed_.notify_all();
  }

  bool reached(Milestone what) const {
    switch (what) {
      case Milestone::welcomed: return welcomed_;
      case Milestone::finished: return finished_;
      case Milestone::goodbye_acknowledged: return acknowledged_;
    }
    return false;
  }

  const PingpongClientOptions& options_;
  const std::uint64_t session_;
  LowLatencySendSocket* socket_ = nullptr;

  // Loop thread only (while pinging).
  PingMessage ping_;
  std::uint64_t sequence_ = 0;
  Clock::time_point sent_at_;
  std::vector<double> samples_;

  std::atomic<bool> pinging_{false};
  std::atomic<std::uint64_t> progress_{0};

  std::mutex mutex_;
  std::condition_variable changed_;
  bool welcomed_ = false;             // guarded by mutex_
  bool finished_ = false;             // guarded by mutex_
  bool acknowledged_ = false;         // guarded by mutex_
  bool interrupted_ = false;          // guarded by mutex_
  std::optional<std::string> error_;  // guarded by mutex_
};

std::uint64_t random_session() {
  std::random_device device;
  return (std::uint64_t{device()} << 32) | device();
}

std::string stall_message(std::uint64_t progress, std::chrono::nanoseconds stall_timeout) {
  return fmt::format("no reply to ping {} within {} s: a message was lost or the server stopped", progress,
                     std::chrono::duration_cast<std::chrono::seconds>(stall_timeout).count());
}

// The ends of a run other than its last reply: a signal, the deadline, the ping connection
// failing (the server went away) or a stall. Looked for by a timer on the event-loop thread,
// not by the main thread: with --cpu N the main thread shares the loop's core, and a
// thread woken there every 100 ms preempts a busy-polling loop each time (the round trip
// under way waits for the switch and what the woken thread runs, tens of microseconds, up
// to a scheduler tick). A timer of a busy-polling loop runs inline, without a switch.
class Watch {
 public:
  Watch(PingLoop& loop, const LowLatencySendSocket& pings, const PingpongClientOptions& options,
        const Deadline& deadline)
      : loop_(loop), pings_(pings), options_(options), deadline_(deadline) {}

  // Loop thread, every tick_period.
  void look() {
    if (ended_) return;
    if (stop_requested() || deadline_.expired()) {
      end(std::nullopt);
    } else if (const auto failure = pings_.failure()) {
      end(fmt::format("the connection to the server failed after {} round trips: {}", loop_.progress(),
                      failure->what()));
    } else if (const auto progress = loop_.progress(); progress != last_progress_) {
      last_progress_ = progress;
      last_change_ = Clock::now();
    } else if (Clock::now() - last_change_ >= options_.stall_timeout) {
      end(stall_message(progress, options_.stall_timeout));
    }
  }

 private:
  void end(std::optional<std::string> why) {
    ended_ = true;
    loop_.end_early(std::move(why));
  }

  PingLoop& loop_;
  const LowLatencySendSocket& pings_;
  const PingpongClientOptions& options_;
  const Deadline& deadline_;
  bool ended_ = false;
  std::uint64_t last_progress_ = 0;
  Clock::time_point last_change_ = Clock::now();
};

// Main thread: sleeps until the run has ended. The watch ends it on the loop thread; only a
// loop thread that stopped running altogether (its timer with it) is caught here.
void wait_for_end(PingLoop& loop, const PingpongClientOptions& options, PingpongClientResult& result) {
  std::uint64_t seen = loop.progress();
  while (!loop.wait_for(PingLoop::Milestone::finished, options.stall_timeout + tick_period)) {
    if (loop.progress() == seen) {
      result.error = stall_message(seen, options.stall_timeout);
      return;
    }
    seen = loop.progress();
  }
}

}  // namespace

Endpoint reply_endpoint_for(const Endpoint& server) {
  const bool ipv6 = server.host.find(':') != std::string::npos;
  std::string host = is_loopback(server.host) ? (ipv6 ? "::1" : "127.0.0.1") : (ipv6 ? "::" : "0.0.0.0");
  return server.with_host(std::move(host)).with_port(0);
}

PingpongClientResult run_pingpong_client(Context& context, const PingpongClientOptions& options,
                                         const Deadline& deadline) {
  PingLoop loop(options, random_session());
  const std::size_t largest = std::max<std::size_t>(options.size, control_frame_size);
  // With two connections, the pongs come to a receive socket of ours, on a port the hello
  // tells the server; otherwise as replies on the ping connection (port 0 in the hello).
  std::optional<LowLatencyReceiveSocket> pongs;
  if (options.two_connections) {
    LowLatencyReceiveOptions receive_options;
    receive_options.max_message_size = largest;
    receive_options.admission.key = options.key;
    pongs.emplace(
        context, reply_endpoint_for(options.server),
        [&loop](std::span<const std::byte> message, const netio::Peer&) { loop.on_message(message); }, receive_options);
  }

  // One ping in flight at a time, but a back-end may report a send complete only after
  // the reply has come back (libfabric's tcp provider progresses a CQ when it is read):
  // enough buffers that such a lag never starves the next ping.
  LowLatencySendOptions send_options;
  send_options.buffer_count = 64;
  send_options.identity.name = "netio_pingpong client";
  send_options.key = options.key;
  send_options.connect_timeout = options.connect_timeout;
  if (!options.two_connections) {
    send_options.replies.max_size = largest;
    send_options.replies.credits = 16;
    send_options.replies.on_reply = [&loop](std::span<const std::byte> message) { loop.on_message(message); };
  }
  LowLatencySendSocket pings(context, options.server, send_options);
  loop.attach(pings);
  if (!pings.wait_connected(deadline.remaining(connect_wait(options.connect_timeout)))) {
    throw Error(Errc::timeout, fmt::format("no connection to {} in time", options.server.to_string()));
  }

  const std::uint16_t reply_port = pongs ? pongs->local_endpoint().port : 0;
  pings.send(encode_control_frame({ControlKind::ping_hello, reply_port, loop.session(), options.size}));
  constexpr auto welcome_timeout = std::chrono::seconds(10);  // once connected
  if (!loop.wait_for(PingLoop::Milestone::welcomed, deadline.remaining(welcome_timeout))) {
    throw Error(
        Errc::timeout,
        fmt::format(
            "{} did not answer within {} s: is it `netio_pingpong --server`{}?", options.server.to_string(),
            std::chrono::duration_cast<std::chrono::seconds>(welcome_timeout).count(),
            pongs ? fmt::format(", and can it connect back to this host on port {}", reply_port) : std::string()));
  }

  PingpongClientResult result;
  Watch watch(loop, pings, options, deadline);
  const auto watch_timer = context.loop().add_timer(tick_period, tick_period, [&watch] { watch.look(); });
  context.loop().post([&loop] { loop.start(); });
  wait_for_end(loop, options, result);
  context.loop().cancel_timer(watch_timer);  // posted: runs before stop()'s round trip
  loop.stop(context);
  if (auto error = loop.error()) result.error = error;
  result.interrupted = loop.interrupted();
  result.rtt_us = loop.take_samples();

  // Tell the server we are done, so it can forget this client; it acknowledges, so the
  // goodbye is known to be out before our socket closes. With two connections, let the
  // server close its connection to us first: the side that closes a connection the other
  // still sends on gets a warning. A missing answer is not an error of the measurement.
  try {
    pings.send(encode_control_frame({ControlKind::ping_goodbye, loop.session(), result.rtt_us.size(), 0}));
    if (loop.wait_for(PingLoop::Milestone::goodbye_acknowledged, goodbye_timeout) && pongs) {
      const auto until = Clock::now() + goodbye_timeout;
      while (pongs->stats().disconnects == 0 && Clock::now() < until) std::this_thread::sleep_for(poll);
    }
  } catch (const Error&) {
  }
  return result;
}

}  // namespace netio::tools
