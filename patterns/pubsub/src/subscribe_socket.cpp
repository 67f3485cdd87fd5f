// SPDX-License-Identifier: MIT
#include "netio/pubsub/subscribe_socket.hpp"

#include "control_message.hpp"
#include "pubsub_metrics.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace netio::pubsub {

namespace {

using Clock = std::chrono::steady_clock;

bool loopback_host(const std::string& host) {
  return host.rfind("127.", 0) == 0 || host == "::1" || host == "[::1]" || host == "localhost";
}

std::string describe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode) {
  constexpr std::size_t shown = 8;
  if (tags.size() == 1)
    return fmt::format("{} subscription to tag {} on {}", to_string(mode), tags[0], publisher.to_string());
  if (tags.size() <= shown) {
    return fmt::format("{} subscription to tags {} on {}", to_string(mode), fmt::join(tags, ","),
                       publisher.to_string());
  }
  return fmt::format("{} subscription to {} tags ({},…) on {}", to_string(mode), tags.size(),
                     fmt::join(tags.first(shown), ","), publisher.to_string());
}

// The callback of one subscribe()/unsubscribe() call that went out as several requests:
// runs once, with the first error, or with nullptr when every request was acknowledged.
class RequestGroup {
 public:
  RequestGroup(std::size_t requests, SubscribeSocket::Done done) : remaining_(requests), done_(std::move(done)) {}
  void on_answer(const Error* error) {
    if (!done_) return;
    if (error || --remaining_ == 0) std::exchange(done_, nullptr)(error);
  }

 private:
  std::size_t remaining_;
  SubscribeSocket::Done done_;
};

}  // namespace

class SubscribeSocket::Impl : public std::enable_shared_from_this<SubscribeSocket::Impl> {
 public:
  Impl(Context& context, Handler on_message, SubscribeOptions options)
      : context_(netio::detail::share_context(context)),
        on_message_(std::move(on_message)),
        options_(std::move(options)) {}

  void start() {
    const auto tick = std::clamp<std::chrono::nanoseconds>(options_.resubscribe_interval / 2,
                                                           std::chrono::milliseconds(5), std::chrono::milliseconds(50));
    std::weak_ptr<Impl> weak = weak_from_this();
    watchdog_ = context_.loop().add_timer(tick, tick, [weak] {
      if (auto self = weak.lock()) self->watch_links();
    });
  }

  // Cancels everything and closes every socket (the publishers see the control connections
  // go and drop this socket's subscriptions).
  void shutdown() {
    std::shared_ptr<HighThroughputReceiveSocket> ht;
    context_.loop().run_sync([&] {
      context_.loop().cancel_timer(watchdog_);
      auto requests = std::move(requests_);
      requests_.clear();
      const Error closed(Errc::closed, "the subscribe socket was destroyed");
      for (auto& [id, r] : requests) {
        context_.loop().cancel_timer(r.timer);
        if (r.done) r.done(&closed);
      }
      links_.clear();  // control sockets close asynchronously on the loop thread
      low_latency_.reset();
      std::lock_guard lock(ht_mutex_);
      ht = std::move(high_throughput_);
      stopped_ = true;
    });
    ht_ready_.notify_all();
  }

  // ---- requests (event-loop thread) ----

  // Sends `tags` in requests of at most detail::max_tags_per_request (one when they fit);
  // `done` runs once, when all are answered or at the first error.
  void request(const Endpoint& publisher, bool subscribe, std::vector<Tag> tags, Mode mode, Backpressure backpressure,
               Done done) {
    try {
      if (subscribe && mode == Mode::low_latency && !on_message_) {
        throw Error(Errc::invalid_option,
                    fmt::format("{}: a low-latency subscription needs a message handler (the SubscribeSocket "
                                "constructor's on_message), and this socket has none",
                                describe(publisher, tags, mode)));
      }
      Link& link = link_for(publisher);
      if (!subscribe) {
        // Only what is subscribed is ended.
        std::erase_if(tags, [&](Tag tag) { return link.subscriptions.erase({tag, mode}) == 0; });
      }
      if (tags.empty()) {
        if (done) done(nullptr);  // nothing to do
        return;
      }
      if (link.lost) {
        throw Error(
            Errc::disconnected,
            fmt::format("{}: the publisher is gone; resubscribing every {} ms at most", describe(publisher, tags, mode),
                        std::chrono::duration_cast<std::chrono::milliseconds>(link.backoff).count()));
      }
      const std::string data_endpoint = receive_endpoint(publisher, mode);
      const std::size_t requests = (tags.size() + detail::max_tags_per_request - 1) / detail::max_tags_per_request;
      auto group = std::make_shared<RequestGroup>(requests, std::move(done));
      for (std::size_t first = 0; first < tags.size(); first += detail::max_tags_per_request) {
        const auto last = std::min(tags.size(), first + detail::max_tags_per_request);
        std::vector<Tag> part(tags.begin() + static_cast<std::ptrdiff_t>(first),
                              tags.begin() + static_cast<std::ptrdiff_t>(last));
        try {
          send_request(link, {subscribe, mode, backpressure, 0, std::move(part), data_endpoint},
                       [group](const Error* error) { group->on_answer(error); });
        } catch (const Error& e) {
          group->on_answer(&e);
          return;
        }
      }
    } catch (const Error& e) {
      if (done) done(&e);
    }
  }

  // ---- high-throughput data (any thread) ----

  // The high-throughput receive socket, once the first such subscription made it.
  std::shared_ptr<HighThroughputReceiveSocket> wait_for_high_throughput(Clock::time_point deadline) {
    std::unique_lock lock(ht_mutex_);
    if (!context_.loop().in_loop_thread()) {
      ht_ready_.wait_until(lock, deadline, [&] { return high_throughput_ != nullptr || stopped_; });
    }
    return high_throughput_;
  }

  std::optional<Publication> recv(std::chrono::nanoseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    const auto socket = wait_for_high_throughput(deadline);
    if (!socket) return std::nullopt;
    for (;;) {
      const auto left = std::max<std::chrono::nanoseconds>(deadline - Clock::now(), std::chrono::nanoseconds::zero());
      auto message = socket->recv(left);
      if (!message) return std::nullopt;
      const auto tag = detail::read_data_header(message->bytes());
      if (!tag) {
        malformed_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      received_.fetch_add(1, std::memory_order_relaxed);
      return Publication(*tag, std::move(*message), detail::data_header_size);
    }
  }

  std::size_t recv_each(std::size_t max, std::chrono::nanoseconds timeout, const Visitor& handler) {
    const auto socket = wait_for_high_throughput(Clock::now() + timeout);
    if (!socket) return 0;
    std::size_t given = 0;
    socket->recv_each(max, timeout, [&](std::span<const std::byte> message, const Peer& peer) {
      const auto tag = detail::read_data_header(message);
      if (!tag) {
        malformed_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
      ++given;
      return handler(*tag, message.subspan(detail::data_header_size), peer);
    });
    received_.fetch_add(given, std::memory_order_relaxed);
    return given;
  }

  SubscribeStats stats() const noexcept {
    SubscribeStats s;
    s.received = received_.load(std::memory_order_relaxed);
    s.dropped = dropped_.load(std::memory_order_relaxed);
    s.subscriptions_lost = lost_.load(std::memory_order_relaxed);
    s.resubscribed = resubscribed_.load(std::memory_order_relaxed);
    s.malformed = malformed_.load(std::memory_order_relaxed);
    return s;
  }

  Context& context() noexcept { return context_; }
  const SubscribeOptions& options() const noexcept { return options_; }

  void throw_if_context_gone() const {
    netio::detail::throw_if_context_gone(context_, [] { return std::string("the subscribe socket"); });
  }

 private:
  // The control connection to one publisher and what this socket subscribed to there.
  struct Link {
    Endpoint publisher;
    std::unique_ptr<LowLatencySendSocket> control;
    bool was_connected = false;
    bool lost = false;                                           // the publisher went away; resubscribing
    std::map<std::pair<Tag, Mode>, Backpressure> subscriptions;  // acknowledged
    std::uint64_t attempt = 0;                                   // the resubscription round running now
    std::size_t awaiting = 0;                                    // its answers still to come
    std::chrono::nanoseconds backoff{0};
    Clock::time_point next_attempt;
    Clock::time_point created = Clock::now();
    std::size_t outstanding = 0;         // requests made and not answered (queued ones included)
    std::deque<std::uint64_t> queued;    // requests waiting for a free control buffer, in order
    std::vector<std::uint64_t> unarmed;  // sent before the control connection was up: no ack timer yet
  };
  struct Request {
    std::string link;
    detail::SubscriptionRequest request;
    Done done;
    EventLoop::TimerId timer = 0;
  };

  Link& link_for(const Endpoint& publisher) {
    const std::string key = publisher.to_string();
    auto& link = links_[key];
    if (!link) {
      link = std::make_unique<Link>();
      link->publisher = publisher;
      open_control(*link);
    }
    return *link;
  }

  void open_control(Link& link) {
    LowLatencySendOptions o;
    o.identity = options_.identity;
    o.key = options_.admission.key;
    o.buffer_count = control_buffers;
    o.buffer_size = 1024;
    o.connect_timeout = options_.connect_timeout;  // a publisher started later: requests wait for it
    std::weak_ptr<Impl> weak = weak_from_this();
    o.replies.on_reply = [weak, key = link.publisher.to_string()](std::span<const std::byte> reply) {
      if (auto self = weak.lock()) self->on_reply(key, reply);
    };
    o.replies.credits = 64;
    link.control = std::make_unique<LowLatencySendSocket>(context_, link.publisher, o);
    link.queued.clear();  // requests of the old connection: failed by the caller
    link.unarmed.clear();
    link.was_connected = false;
    link.created = Clock::now();
  }

  // The receive socket of `mode` (made on first use), as the endpoint the publisher connects to.
  std::string receive_endpoint(const Endpoint& publisher, Mode mode) {
    if (transport_ && (transport_->scheme != publisher.scheme || transport_->options != publisher.options)) {
      throw Error(Errc::invalid_option,
                  fmt::format("{}: this subscribe socket receives over {}; use another one for publishers of another "
                              "transport",
                              publisher.to_string(), transport_->to_string()));
    }
    Endpoint local = publisher.with_port(0);
    local =
        local.with_host(options_.data_host ? *options_.data_host
                                           : (loopback_host(publisher.host) ? publisher.host : std::string("0.0.0.0")));
    if (mode == Mode::low_latency) {
      if (!low_latency_) {
        LowLatencyReceiveOptions o;
        o.max_message_size = options_.low_latency_max_message_size + detail::data_header_size;
        o.shared_budget = options_.receive_budget;
        o.admission = options_.admission;
        low_latency_ = std::make_unique<LowLatencyReceiveSocket>(
            context_, local,
            [this](std::span<const std::byte> message, const Peer& peer) { on_low_latency(message, peer); }, o);
        transport_ = local;
      }
      return low_latency_->local_endpoint().to_string();
    }
    std::lock_guard lock(ht_mutex_);
    if (!high_throughput_) {
      HighThroughputReceiveOptions o;
      o.max_message_size = options_.max_message_size + detail::data_header_size;
      o.page_credits = options_.page_credits;
      o.shared_budget = options_.receive_budget;
      o.admission = options_.admission;
      high_throughput_ = std::make_shared<HighThroughputReceiveSocket>(context_, local, o);
      transport_ = local;
      ht_ready_.notify_all();
    }
    return high_throughput_->local_endpoint().to_string();
  }

  void on_low_latency(std::span<const std::byte> message, const Peer& peer) {
    const auto tag = detail::read_data_header(message);
    if (!tag) {
      malformed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    received_.fetch_add(1, std::memory_order_relaxed);
    on_message_(*tag, message.subspan(detail::data_header_size), peer);
  }

  void send_request(Link& link, detail::SubscriptionRequest request, Done done) {
    const auto id = next_request_++;
    request.request_id = id;
    ++link.outstanding;
    auto& r = requests_.emplace(id, Request{link.publisher.to_string(), std::move(request), std::move(done), 0})
                  .first->second;
    // Beyond the control connection's buffers, requests wait in order (send_queued()).
    if (link.queued.empty() && link.control->try_send(detail::encode(r.request))) {
      // Sent into a control connection still connecting (a publisher not started yet, until
      // connect_timeout): its ack_timeout starts once it is up (watch_links()).
      if (link.control->connected())
        arm_timeout(id, r);
      else
        link.unarmed.push_back(id);
    } else {
      link.queued.push_back(id);
    }
  }

  // ack_timeout counts from when the request goes out, not from when it was queued.
  void arm_timeout(std::uint64_t id, Request& r) {
    std::weak_ptr<Impl> weak = weak_from_this();
    r.timer = context_.loop().add_timer(options_.ack_timeout, std::chrono::nanoseconds::zero(), [weak, id] {
      if (auto self = weak.lock()) self->on_request_timeout(id);
    });
  }

  // Ends a request: its timer, its link's count, and its callback with `error` (nullptr: acknowledged).
  void finish(std::uint64_t id, const Error* error) {
    const auto it = requests_.find(id);
    if (it == requests_.end()) return;
    Request r = std::move(it->second);
    requests_.erase(it);
    if (r.timer != 0) context_.loop().cancel_timer(r.timer);
    if (const auto link = links_.find(r.link); link != links_.end()) {
      --link->second->outstanding;
      send_queued(*link->second);
      if (!error) link->second->was_connected = true;  // an answer came: it was up, whatever the watchdog saw
      if (!error && r.request.subscribe) {
        for (const Tag tag : r.request.tags)
          link->second->subscriptions[{tag, r.request.mode}] = r.request.backpressure;
      }
    }
    if (r.done) r.done(error);
  }

  // Sends the queued requests that fit the control connection's free buffers now. Called as
  // answers come (an answered request's buffer is free again) and by the watchdog.
  void send_queued(Link& link) {
    if (!link.control) return;  // the publisher is gone: its requests are being failed
    while (!link.queued.empty()) {
      const auto id = link.queued.front();
      if (const auto it = requests_.find(id); it != requests_.end()) {  // else ended meanwhile (failed)
        if (!link.control->try_send(detail::encode(it->second.request))) return;
        if (link.control->connected())
          arm_timeout(id, it->second);
        else
          link.unarmed.push_back(id);
      }
      link.queued.pop_front();
    }
  }

  void on_request_timeout(std::uint64_t id) {
    const auto it = requests_.find(id);
    if (it == requests_.end()) return;
    const auto& r = it->second;
    const Error error(Errc::timeout,
                      fmt::format("{}: no answer from the publisher within {} ms",
                                  describe(Endpoint::parse(r.link), r.request.tags, r.request.mode),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(options_.ack_timeout).count()));
    finish(id, &error);
  }

  void on_reply(const std::string& key, std::span<const std::byte> bytes) {
    std::variant<detail::SubscriptionAnswer, detail::DropReport> reply;
    try {
      reply = detail::decode_reply(bytes);
    } catch (const Error& e) {
      if (!complained_)
        log(LogLevel::warn, "subscriber: ignoring a malformed reply from publisher {}: {}", key, e.what());
      complained_ = true;
      return;
    }
    if (const auto* report = std::get_if<detail::DropReport>(&reply)) {
      dropped_.fetch_add(report->dropped, std::memory_order_relaxed);
      drops_by_tag_.add(report->tag, report->dropped);
      return;
    }
    const auto& answer = std::get<detail::SubscriptionAnswer>(reply);
    const auto it = requests_.find(answer.request_id);
    if (it == requests_.end() || it->second.link != key) return;  // timed out already
    if (answer.accepted) {
      finish(answer.request_id, nullptr);
      return;
    }
    const auto& r = it->second.request;
    const Error error(
        Errc::handshake_rejected,
        fmt::format("{}: refused by the publisher: {}", describe(Endpoint::parse(key), r.tags, r.mode), answer.reason));
    finish(answer.request_id, &error);
  }

  // ---- publishers going and coming back (event-loop thread) ----

  void watch_links() {
    const auto now = Clock::now();
    for (auto it = links_.begin(); it != links_.end();) {
      Link& link = *it->second;
      if (!link.lost) {
        if (link.control->connected()) {
          link.was_connected = true;
          for (const auto id : std::exchange(link.unarmed, {})) {
            if (const auto r = requests_.find(id); r != requests_.end()) arm_timeout(id, r->second);
          }
          send_queued(link);
        } else if (auto failure = link.control->failure(); failure && !link.was_connected) {
          // Refused or rejected before it was ever up (no publisher there, not admitted, a
          // wrong key): its requests fail now with the reason, not at ack_timeout.
          fail_requests_of(it->first,
                           Error(failure->code(), fmt::format("publisher {}: the control connection failed: {}",
                                                              it->first, failure->what())));
          if (stopped_) return;  // a callback destroyed the socket
          if (link.subscriptions.empty()) {
            it = links_.erase(it);  // a later subscribe starts afresh
            continue;
          }
        } else if (link.was_connected || (options_.connect_timeout < std::chrono::nanoseconds::zero() &&
                                          now - link.created > options_.ack_timeout)) {
          // (A control connection that retries fails by itself at connect_timeout.)
          if (!link.was_connected && !link.queued.empty()) {
            // Never up: the requests waiting for a control buffer would wait for ever.
            fail_requests_of(
                it->first,
                Error(
                    Errc::timeout,
                    fmt::format("publisher {}: not connected within {} ms", it->first,
                                std::chrono::duration_cast<std::chrono::milliseconds>(options_.ack_timeout).count())));
            if (stopped_) return;
          }
          if (link.subscriptions.empty() && link.outstanding == 0) {
            it = links_.erase(it);  // nothing to restore: a later subscribe starts afresh
            continue;
          }
          if (link.was_connected) {
            on_publisher_lost(it->first, link);
            if (stopped_) return;
          }
        }
      } else if (link.subscriptions.empty()) {
        it = links_.erase(it);  // everything was unsubscribed meanwhile
        continue;
      } else if (now >= link.next_attempt) {
        start_resubscription(it->first, link);
        if (stopped_) return;
      }
      ++it;
    }
  }

  void fail_requests_of(const std::string& key, const Error& error) {
    std::vector<std::uint64_t> ids;
    for (const auto& [id, r] : requests_) {
      if (r.link == key) ids.push_back(id);
    }
    for (const auto id : ids) finish(id, &error);
  }

  void on_publisher_lost(const std::string& key, Link& link) {
    link.lost = true;
    link.control.reset();  // closes asynchronously
    link.queued.clear();
    link.unarmed.clear();
    link.backoff = options_.resubscribe_interval;
    link.next_attempt = Clock::now() + link.backoff;
    fail_requests_of(key, Error(Errc::disconnected, fmt::format("publisher {} went away", key)));
    lost_.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::info, "subscriber: publisher {} went away with {} subscription(s); resubscribing", key,
        link.subscriptions.size());
    if (options_.on_subscriptions_lost) options_.on_subscriptions_lost(link.publisher);
  }

  void start_resubscription(const std::string& key, Link& link) {
    fail_requests_of(key,
                     Error(Errc::disconnected, fmt::format("publisher {}: a new resubscription round started", key)));
    link.control.reset();
    open_control(link);
    const auto attempt = ++link.attempt;
    link.next_attempt = Clock::now() + link.backoff;
    link.backoff = std::min(link.backoff * 2, options_.max_resubscribe_interval);
    // As few requests as the tags fit: one per (mode, back-pressure) and 256 tags.
    std::vector<detail::SubscriptionRequest> requests;
    std::map<std::pair<Mode, Backpressure>, std::size_t> open;  // the request being filled for each
    try {
      for (const auto& [key_pair, backpressure] : link.subscriptions) {
        const auto [tag, mode] = key_pair;
        auto slot = open.find({mode, backpressure});
        if (slot == open.end() || requests[slot->second].tags.size() == detail::max_tags_per_request) {
          requests.push_back({true, mode, backpressure, 0, {}, receive_endpoint(link.publisher, mode)});
          slot = open.insert_or_assign({mode, backpressure}, requests.size() - 1).first;
        }
        requests[slot->second].tags.push_back(tag);
      }
      link.awaiting = requests.size();
      std::weak_ptr<Impl> weak = weak_from_this();
      for (auto& r : requests) {
        send_request(link, std::move(r), [weak, key, attempt](const Error* error) {
          if (auto self = weak.lock()) self->on_resubscribe_answer(key, attempt, error);
        });
      }
    } catch (const Error& e) {
      log(LogLevel::debug, "subscriber: resubscribing to {}: {}", key, e.what());
      return;  // the next round tries again
    }
  }

  void on_resubscribe_answer(const std::string& key, std::uint64_t attempt, const Error* error) {
    const auto it = links_.find(key);
    if (it == links_.end()) return;
    Link& link = *it->second;
    if (!link.lost || link.attempt != attempt || error) return;  // a stale round, or the next round retries
    if (--link.awaiting > 0) return;
    link.lost = false;
    link.was_connected = true;
    resubscribed_.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::info, "subscriber: resubscribed to publisher {} ({} subscription(s))", key,
        link.subscriptions.size());
    if (options_.on_resubscribed) options_.on_resubscribed(link.publisher);
  }

  static constexpr std::size_t control_buffers = 32;  // requests on the wire per publisher

  Context context_;     // first, so it goes last: keeps the loop and back-ends allocated if the Context went
  Handler on_message_;  // low-latency subscriptions; may be empty
  SubscribeOptions options_;
  // Event-loop thread only:
  std::map<std::string, std::unique_ptr<Link>> links_;
  std::unordered_map<std::uint64_t, Request> requests_;
  std::uint64_t next_request_ = 1;
  std::unique_ptr<LowLatencyReceiveSocket> low_latency_;
  std::optional<Endpoint> transport_;
  EventLoop::TimerId watchdog_ = 0;
  bool complained_ = false;
  // Any thread:
  std::mutex ht_mutex_;
  std::condition_variable ht_ready_;
  std::shared_ptr<HighThroughputReceiveSocket> high_throughput_;
  bool stopped_ = false;
  std::atomic<std::uint64_t> received_{0}, dropped_{0}, lost_{0}, resubscribed_{0}, malformed_{0};
  detail::DropsByTag drops_by_tag_;  // as the publishers report them, for the metrics

 public:
  const detail::DropsByTag& drops_by_tag() const noexcept { return drops_by_tag_; }
  MetricsRegistry::Registration metrics;  // pubsub_metrics.hpp: removed first by ~SubscribeSocket
};

SubscribeSocket::SubscribeSocket(Context& context, SubscribeOptions options)
    : SubscribeSocket(context, Handler{}, std::move(options)) {}

SubscribeSocket::SubscribeSocket(Context& context, Handler on_message, SubscribeOptions options)
    : impl_(std::make_shared<Impl>(context, std::move(on_message), std::move(options))) {
  impl_->start();
  impl_->metrics = detail::add_subscribe_metrics(
      context, [impl = impl_.get()] { return impl->stats(); }, impl_->drops_by_tag());
}

SubscribeSocket::~SubscribeSocket() {
  impl_->metrics.reset();
  try {
    impl_->shutdown();
    // Inside one of its own callbacks (on the loop thread) the Impl, whose handler may still be
    // on the stack, is freed in a later loop task; every caller of a callback returns at once
    // once stopped_ is set.
    auto& loop = impl_->context().loop();
    if (loop.in_loop_thread()) loop.post([impl = std::move(impl_)] {});
  } catch (const std::exception& e) {
    log(LogLevel::error, "subscribe socket: closing failed: {}", e.what());
  }
}

namespace {

// A blocking call's wait for its callback.
struct Waiter {
  std::mutex mutex;
  std::condition_variable changed;
  bool done = false;
  std::optional<Error> error;
};

}  // namespace

void SubscribeSocket::subscribe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode,
                                Backpressure backpressure, Done done) {
  impl_->throw_if_context_gone();
  auto impl = impl_;
  impl->context().loop().post([impl, publisher, tags = std::vector<Tag>(tags.begin(), tags.end()), mode, backpressure,
                               done = std::move(done)]() mutable {
    impl->request(publisher, true, std::move(tags), mode, backpressure, std::move(done));
  });
}

void SubscribeSocket::unsubscribe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode, Done done) {
  impl_->throw_if_context_gone();
  auto impl = impl_;
  impl->context().loop().post(
      [impl, publisher, tags = std::vector<Tag>(tags.begin(), tags.end()), mode, done = std::move(done)]() mutable {
        impl->request(publisher, false, std::move(tags), mode, Backpressure::publisher_default, std::move(done));
      });
}

void SubscribeSocket::subscribe(const Endpoint& publisher, Tag tag, Mode mode, Backpressure backpressure, Done done) {
  subscribe(publisher, std::span<const Tag>(&tag, 1), mode, backpressure, std::move(done));
}

void SubscribeSocket::unsubscribe(const Endpoint& publisher, Tag tag, Mode mode, Done done) {
  unsubscribe(publisher, std::span<const Tag>(&tag, 1), mode, std::move(done));
}

namespace {

// How long a blocking call waits for its answer at most: the publisher's connection, then
// its acknowledgement (nothing: without end, connect_timeout 0).
std::optional<std::chrono::nanoseconds> answer_limit(const SubscribeOptions& options) {
  if (options.connect_timeout == connect_forever) return std::nullopt;
  return std::max(options.connect_timeout, std::chrono::nanoseconds::zero()) + options.ack_timeout;
}

template <typename Start>
void wait_for_answer(Context& context, std::optional<std::chrono::nanoseconds> timeout, const std::string& what,
                     Start start) {
  if (context.loop().in_loop_thread()) {
    throw Error(Errc::would_block, fmt::format("{}: cannot wait for the acknowledgement on the event-loop thread; use "
                                               "the form taking a callback there",
                                               what));
  }
  auto waiter = std::make_shared<Waiter>();
  start([waiter](const Error* error) {
    {
      std::lock_guard lock(waiter->mutex);
      waiter->done = true;
      // A message of its own, not a copy: a copied runtime_error shares its message buffer
      // with the original, here a local of the loop thread that dies after this returns, and
      // the buffer's reference count lives in uninstrumented libstdc++. TSan took the loop
      // thread freeing the buffer for a race with this thread reading the message (CI, TSan).
      if (error) waiter->error.emplace(error->code(), std::string(error->what()));
    }
    waiter->changed.notify_all();
  });
  std::unique_lock lock(waiter->mutex);
  // The request's own timer ends it after `timeout`; the margin covers a busy loop.
  if (!timeout) {
    waiter->changed.wait(lock, [&] { return waiter->done; });
  } else if (!waiter->changed.wait_for(lock, *timeout + std::chrono::seconds(5), [&] { return waiter->done; })) {
    throw Error(Errc::timeout, fmt::format("{}: no answer", what));
  }
  // Again a message of its own, for the waiter may be released last on the loop thread.
  if (waiter->error) throw Error(waiter->error->code(), std::string(waiter->error->what()));
}

}  // namespace

void SubscribeSocket::subscribe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode,
                                Backpressure backpressure) {
  impl_->throw_if_context_gone();
  wait_for_answer(impl_->context(), answer_limit(impl_->options()), describe(publisher, tags, mode),
                  [&](Done done) { subscribe(publisher, tags, mode, backpressure, std::move(done)); });
}

void SubscribeSocket::unsubscribe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode) {
  impl_->throw_if_context_gone();
  wait_for_answer(impl_->context(), answer_limit(impl_->options()),
                  "unsubscribe from " + describe(publisher, tags, mode),
                  [&](Done done) { unsubscribe(publisher, tags, mode, std::move(done)); });
}

void SubscribeSocket::subscribe(const Endpoint& publisher, Tag tag, Mode mode, Backpressure backpressure) {
  subscribe(publisher, std::span<const Tag>(&tag, 1), mode, backpressure);
}

void SubscribeSocket::unsubscribe(const Endpoint& publisher, Tag tag, Mode mode) {
  unsubscribe(publisher, std::span<const Tag>(&tag, 1), mode);
}

std::optional<Publication> SubscribeSocket::recv(std::chrono::nanoseconds timeout) {
  impl_->throw_if_context_gone();
  return impl_->recv(timeout);
}

std::size_t SubscribeSocket::recv_each(std::size_t max, std::chrono::nanoseconds timeout, const Visitor& handler) {
  impl_->throw_if_context_gone();
  return impl_->recv_each(max, timeout, handler);
}

SubscribeStats SubscribeSocket::stats() const noexcept { return impl_->stats(); }

}  // namespace netio::pubsub
