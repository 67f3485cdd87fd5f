// SPDX-License-Identifier: MIT
#include "netio/pubsub/publish_socket.hpp"

#include "control_message.hpp"
#include "data_connection.hpp"
#include "pending_delivery.hpp"
#include "pubsub_metrics.hpp"
#include "subscription_table.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/printable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace netio::pubsub {

using detail::DataConnection;
using detail::Delivery;
using detail::Route;

namespace {

// The message as it goes on the wire: the tag, then the payload, handed to the sockets as
// two parts (they copy each into their pages: the payload is copied once per subscriber,
// not joined to its header first).
class Frame {
 public:
  Frame(Tag tag, std::span<const std::byte> data) noexcept : parts_{std::span<const std::byte>(header_), data} {
    detail::write_data_header(header_.data(), tag);
  }
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;
  std::span<const std::span<const std::byte>> parts() const noexcept { return parts_; }

 private:
  std::array<std::byte, detail::data_header_size> header_{};
  std::array<std::span<const std::byte>, 2> parts_;
};

// One Publisher's counters: only its thread writes them, with a plain load and store (no
// locked instruction, which cost 18 % of a 64-byte publish), and stats() adds them up.
struct PublisherCounters {
  std::atomic<std::uint64_t> published{0}, unrouted{0}, deliveries{0};
};

// Counts one on `own` (a Publisher's, single writer) or else on the socket's `shared`.
void bump(std::atomic<std::uint64_t>& shared, std::atomic<std::uint64_t>* own) {
  if (own != nullptr) {
    own->store(own->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else {
    shared.fetch_add(1, std::memory_order_relaxed);
  }
}

bool unspecified_host(const std::string& host) { return host.empty() || host == "0.0.0.0" || host == "::"; }

}  // namespace

class PublishSocket::Impl : public std::enable_shared_from_this<PublishSocket::Impl> {
 public:
  Impl(Context& context, PublishOptions options)
      : context_(netio::detail::share_context(context)),
        options_(std::move(options)),
        pool_(std::make_shared<PagePool>(options_.pages)) {}

  void start(const Endpoint& local) {
    LowLatencyReceiveOptions control_options;
    control_options.max_message_size = detail::max_request_size;
    control_options.admission = options_.admission;
    control_options.events.on_disconnected = [this](const Peer& peer, const Error&) { on_control_gone(peer); };
    control_ = std::make_unique<LowLatencyReceiveSocket>(
        context_, local, [this](std::span<const std::byte> bytes, const Peer& peer) { on_request(bytes, peer); },
        control_options);
    {
      // Requests may arrive from here on (on the loop thread): they wait for what they use.
      std::lock_guard lock(started_mutex_);
      local_ = control_->local_endpoint();
      if (options_.max_connections != 0) {  // the data connections' identity names local_
        limited_[0] = std::make_shared<MultiDestinationSendSocket>(context_, limited_options(Mode::low_latency));
        limited_[1] = std::make_shared<MultiDestinationSendSocket>(context_, limited_options(Mode::high_throughput));
      }
      started_ = true;
    }
    started_changed_.notify_all();
    std::weak_ptr<Impl> weak = weak_from_this();
    drop_timer_ = context_.loop().add_timer(options_.drop_report_interval, options_.drop_report_interval, [weak] {
      if (auto self = weak.lock()) self->report_drops();
    });
  }

  // Stops taking requests, then closes every data connection: on a user thread after what
  // was published went out (the sockets' blocking close), on the loop thread asynchronously.
  void shutdown() {
    shut_down_.store(true, std::memory_order_relaxed);
    control_.reset();  // no request or event runs after this
    std::vector<std::shared_ptr<DataConnection>> connections;
    context_.loop().run_sync([&] {
      context_.loop().cancel_timer(drop_timer_);
      if (poll_timer_) context_.loop().cancel_timer(*poll_timer_);
      poll_timer_.reset();
      pending_.clear();
      unsent_answers_.clear();
      connections = table_.connections();
      for (const auto& c : connections) table_.remove_connection(c);
    });
    if (!context_.loop().in_loop_thread()) {
      for (const auto& c : connections) c->close_and_wait();
    }
    connections.clear();  // on the loop thread: asynchronous closes (the destructor's close())
    // Under a limit: every data connection closes after what was published went out (on a
    // user thread waiting up to send_timeout; on the loop thread asynchronously).
    for (const auto& limited : limited_) {
      if (!limited) continue;
      try {
        limited->close_and_wait();
      } catch (const Error& e) {
        log(LogLevel::warn, "publisher {}: not every data connection closed cleanly: {}", local_.to_string(), e.what());
      }
    }
  }

  // ---- publishing (any thread) ----

  void publish(Tag tag, std::span<const std::byte> data) { publish_on(*table_.routes(), tag, data); }

  // Routes a Publisher keeps: taken again only when they changed.
  const detail::RouteMap& current_routes(detail::SubscriptionTable::VersionedRoutes& kept) const {
    if (shut_down_.load(std::memory_order_relaxed)) {
      kept = {};  // what they name is closed: let it go
      throw Error(Errc::closed, fmt::format("publish to {}: the publish socket was destroyed", local_.to_string()));
    }
    if (kept.version != table_.version()) kept = table_.versioned_routes();
    return *kept.routes;
  }

  // `own`: the calling Publisher's counters, or null for the socket's.
  void publish_on(const detail::RouteMap& routes, Tag tag, std::span<const std::byte> data,
                  PublisherCounters* own = nullptr) {
    const detail::RouteList* list = routes.find(tag);
    if (list == nullptr) {
      bump(unrouted_, own ? &own->unrouted : nullptr);
      bump(published_, own ? &own->published : nullptr);
      return;
    }
    const Frame frame(tag, data);
    std::optional<Error> failure;
    std::string refused;
    for (const Route& route : *list) {
      try {
        const Delivery result = route.backpressure == Backpressure::drop
                                    ? route.connection->deliver_or_full(frame.parts())
                                    : route.connection->deliver(frame.parts());
        count(result, route, own ? &own->deliveries : nullptr);
        if ((result == Delivery::full || result == Delivery::reconnecting) &&
            route.backpressure != Backpressure::drop) {  // blocking, on the loop thread
          refused += (refused.empty() ? "" : ", ") + printable(route.connection->subscriber().identity.name);
          if (!failure) failure = Error(Errc::would_block, "");
        }
      } catch (const Error& e) {
        refused += (refused.empty() ? "" : ", ") + printable(route.connection->subscriber().identity.name);
        if (!failure) failure = e;
      }
    }
    bump(published_, own ? &own->published : nullptr);
    if (failure) {
      throw Error(failure->code(),
                  fmt::format("publish to {} (tag {}): not taken by subscriber(s) {} (the others have it): {}",
                              local_.to_string(), tag, refused,
                              failure->code() == Errc::would_block
                                  ? "no room now and nothing may wait on the event-loop thread: use try_publish() there"
                                  : failure->what()));
    }
  }

  // `routes`: a Publisher's (else the table's now); `own`: its counters (else the socket's).
  bool try_publish(Tag tag, std::span<const std::byte> data, std::vector<detail::PendingDelivery>& pending,
                   bool started, const detail::RouteMap* routes = nullptr, PublisherCounters* own = nullptr) {
    if (!started) {
      std::shared_ptr<const detail::RouteMap> now;
      if (routes == nullptr) {
        now = table_.routes();
        routes = now.get();
      }
      const detail::RouteList* list = routes->find(tag);
      if (list == nullptr) {
        bump(unrouted_, own ? &own->unrouted : nullptr);
        bump(published_, own ? &own->published : nullptr);
        return true;
      }
      pending.clear();
      for (const Route& r : *list) pending.push_back({r.connection, r.backpressure, r.counters});
    }
    const Frame frame(tag, data);
    std::size_t kept = 0;
    for (auto& p : pending) {
      const Delivery result = p.connection->try_deliver(frame.parts());
      if (result == Delivery::full && p.backpressure == Backpressure::drop) {
        count_drop(*p.counters, tag);
        continue;
      }
      if (result == Delivery::sent) bump(deliveries_, own ? &own->deliveries : nullptr);
      // A subscriber whose connection is being made again is skipped, whatever its
      // back-pressure: it has room, only not yet a connection; the retry reaches it.
      if (result == Delivery::full || result == Delivery::reconnecting) pending[kept++] = std::move(p);
    }
    pending.resize(kept);
    if (kept == 0) bump(published_, own ? &own->published : nullptr);
    return kept == 0;
  }

  void flush() {
    if (limited_[1]) limited_[1]->flush();  // every open high-throughput connection
    const auto connections = table_.connections_now();
    for (const auto& connection : *connections) connection->flush();
  }

  bool wait_for_subscriptions(std::size_t count, std::chrono::nanoseconds timeout) const {
    return wait_until_answered([&] { return table_.subscription_count() >= count; }, timeout);
  }

  bool wait_for_subscribers(std::size_t count, std::chrono::nanoseconds timeout) const {
    return wait_until_answered([&] { return table_.subscriber_count() >= count; }, timeout);
  }

  // Waits until `reached` holds and no request waits for its data connection.
  template <typename Reached>
  bool wait_until_answered(Reached reached, std::chrono::nanoseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!reached() || pending_count_.load(std::memory_order_acquire) > 0) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  PublishStats stats() const noexcept {
    PublishStats s;
    // Connections first (acquire): a removal updates them last (see on_control_gone() and
    // SubscriptionTable::remove_connection()), so what follows is at least as new.
    s.connections = table_.connection_count();
    s.subscribers = table_.subscriber_count();
    s.subscriptions = table_.subscription_count();
    s.subscribers_lost = subscribers_lost_.load(std::memory_order_relaxed);
    std::lock_guard lock(publishers_mutex_);  // a Publisher that goes folds its counts in under it
    s.published = published_.load(std::memory_order_relaxed);
    s.unrouted = unrouted_.load(std::memory_order_relaxed);
    s.deliveries = deliveries_.load(std::memory_order_relaxed);
    for (const auto& c : publishers_) {
      s.published += c->published.load(std::memory_order_relaxed);
      s.unrouted += c->unrouted.load(std::memory_order_relaxed);
      s.deliveries += c->deliveries.load(std::memory_order_relaxed);
    }
    s.dropped = dropped_.load(std::memory_order_relaxed);
    return s;
  }

  // A Publisher's counters, counted in stats() from now on.
  std::shared_ptr<PublisherCounters> add_publisher() {
    auto counters = std::make_shared<PublisherCounters>();
    std::lock_guard lock(publishers_mutex_);
    publishers_.push_back(counters);
    return counters;
  }
  // A Publisher goes: its counts move to the socket's.
  void remove_publisher(const std::shared_ptr<PublisherCounters>& counters) noexcept {
    std::lock_guard lock(publishers_mutex_);
    published_.fetch_add(counters->published.load(std::memory_order_relaxed), std::memory_order_relaxed);
    unrouted_.fetch_add(counters->unrouted.load(std::memory_order_relaxed), std::memory_order_relaxed);
    deliveries_.fetch_add(counters->deliveries.load(std::memory_order_relaxed), std::memory_order_relaxed);
    std::erase(publishers_, counters);
  }

  const Endpoint& local() const noexcept { return local_; }
  const PagePool& pool() const noexcept { return *pool_; }
  ConnectionStats connection_stats(Mode mode) const {
    const auto& limited = limited_[mode == Mode::low_latency ? 0 : 1];
    return limited ? limited->connection_stats() : ConnectionStats{};
  }

  void throw_if_context_gone() const {
    netio::detail::throw_if_context_gone(
        context_, [this] { return fmt::format("the publish socket at {}", local().to_string()); });
  }

 private:
  struct PendingAck {
    std::shared_ptr<DataConnection> connection;
    Peer control;
    std::uint64_t request_id = 0;
  };

  // A drop subscriber without room, or (on the loop thread, which cannot wait for it)
  // without its connection, has the message dropped and counted.
  void count(Delivery result, const Route& route, std::atomic<std::uint64_t>* own_deliveries = nullptr) {
    if (result == Delivery::sent) {
      bump(deliveries_, own_deliveries);
    } else if ((result == Delivery::full || result == Delivery::reconnecting) &&
               route.backpressure == Backpressure::drop) {
      count_drop(*route.counters, route.tag);
    }
  }

  // The connection manager of one mode under PublishOptions::max_connections.
  MultiDestinationSendOptions limited_options(Mode mode) const {
    MultiDestinationSendOptions o;
    o.max_connections = options_.max_connections;
    o.policy = options_.connection_policy;
    o.send_timeout = options_.send_timeout;
    const Identity identity{options_.identity.name, options_.identity.endpoint.value_or(local_)};
    if (mode == Mode::high_throughput) {
      o.mode = SendMode::high_throughput;
      o.high_throughput.shared_pages = pool_;
      o.high_throughput.page_size = pool_->page_size();
      o.high_throughput.flush_timeout = options_.flush_timeout;
      o.high_throughput.send_timeout = options_.send_timeout;
      o.high_throughput.identity = identity;
      o.high_throughput.key = options_.admission.key;
      o.high_throughput.replies.max_size = 0;
    } else {
      o.mode = SendMode::low_latency;
      o.low_latency.buffer_count = options_.low_latency_buffers;
      o.low_latency.send_timeout = options_.send_timeout;
      o.low_latency.identity = identity;
      o.low_latency.key = options_.admission.key;
      o.low_latency.replies.max_size = 0;
    }
    return o;
  }
  void count_drop(detail::RouteCounters& counters, Tag tag) {
    counters.dropped.fetch_add(1, std::memory_order_relaxed);
    counters.unreported.fetch_add(1, std::memory_order_relaxed);
    dropped_.fetch_add(1, std::memory_order_relaxed);
    drops_by_tag_.add(tag, 1);  // the drop path only: a delivery never gets here
  }

  // ---- subscriptions (event-loop thread) ----

  void on_request(std::span<const std::byte> bytes, const Peer& peer) {
    if (!started_seen_) {  // the first request may come before start() finished on a user thread
      std::unique_lock lock(started_mutex_);
      started_changed_.wait(lock, [this] { return started_; });
      started_seen_ = true;
    }
    detail::SubscriptionRequest request;
    try {
      request = detail::decode_request(bytes);
    } catch (const Error& e) {
      if (complained_.insert(peer.connection()).second) {
        log(LogLevel::warn, "publisher {}: ignoring a malformed request from {}: {}", local_.to_string(),
            peer.to_string(), e.what());
      }
      return;
    }
    if (!request.subscribe) {
      if (auto emptied = table_.unsubscribe(peer.connection(), request.mode, request.tags)) emptied->close();
      answer(peer, request.request_id, true, "");
      return;
    }
    auto connection = table_.find(peer.connection(), request.mode);
    if (auto refusal = over_tag_limit(request, peer, connection.get())) {
      answer(peer, request.request_id, false, *refusal);
      return;
    }
    const Backpressure backpressure =
        request.backpressure == Backpressure::publisher_default ? options_.backpressure : request.backpressure;
    // Counted as pending before the table shows it: a thread in wait_for_subscribers() or
    // wait_for_subscriptions() that sees the new routes sees the request unanswered too.
    pending_count_.store(pending_.size() + 1, std::memory_order_seq_cst);
    struct Recount {
      Impl& self;
      ~Recount() { self.pending_count_.store(self.pending_.size(), std::memory_order_release); }
    } recount{*this};
    const bool known = connection != nullptr;
    if (!connection) {
      try {
        connection = open_connection(request, peer);
      } catch (const Error& e) {
        answer(peer, request.request_id, false, e.what());
        return;
      }
      table_.add_connection(connection);
    }
    // The route is live from here on: what is published now waits in the connection's
    // buffers until it is up, so nothing published after the acknowledgement is missed.
    table_.subscribe(connection, request.tags, backpressure);
    // Under a limit a subscriber's connection that was up once may be torn down now: its
    // messages wait for the re-connect, so a further subscription needs no connection now.
    if ((known && connection->under_limit() && !connection->failure()) || connection->connect()) {
      answer(peer, request.request_id, true, "");
      return;
    }
    pending_.push_back({std::move(connection), peer, request.request_id});
    ensure_polling();
  }

  // Every millisecond while a subscription waits for its connection or an answer for room.
  void ensure_polling() {
    if (poll_timer_) return;
    std::weak_ptr<Impl> weak = weak_from_this();
    poll_timer_ = context_.loop().add_timer(std::chrono::milliseconds(1), std::chrono::milliseconds(1), [weak] {
      if (auto self = weak.lock()) self->poll();
    });
  }

  void poll() {
    poll_pending();
    send_unsent_answers();
    if (pending_.empty() && unsent_answers_.empty() && poll_timer_) {
      context_.loop().cancel_timer(*poll_timer_);
      poll_timer_.reset();
    }
  }

  // Why the subscription request may not be taken (it would take the subscriber beyond
  // max_tags_per_subscriber in its mode), or nothing. Tags it holds already (on
  // `connection`, its data connection in that mode if it has one) do not count again.
  std::optional<std::string> over_tag_limit(const detail::SubscriptionRequest& request, const Peer& peer,
                                            DataConnection* connection) const {
    const std::size_t limit = options_.max_tags_per_subscriber;
    if (limit == 0) return std::nullopt;
    std::set<Tag> fresh;
    for (const Tag tag : request.tags) {
      if (!connection || connection->tags().count(tag) == 0) fresh.insert(tag);
    }
    const std::size_t held = connection ? connection->tags().size() : 0;
    if (held + fresh.size() <= limit) return std::nullopt;
    return fmt::format(
        "publisher {}: subscriber {} would hold {} {} tags, more than max_tags_per_subscriber ({}); "
        "nothing of this request was subscribed",
        local_.to_string(), peer.to_string(), held + fresh.size(), to_string(request.mode), limit);
  }

  std::shared_ptr<DataConnection> open_connection(const detail::SubscriptionRequest& request, const Peer& peer) {
    Endpoint remote = Endpoint::parse(request.data_endpoint);
    // A subscriber listening on every interface is reached where its request came from.
    if (unspecified_host(remote.host)) remote = remote.with_host(peer.address().host);
    SubscriberInfo info{peer, peer.identity(), remote, request.mode};
    if (const auto& limited = limited_[request.mode == Mode::low_latency ? 0 : 1]) {
      return std::make_shared<DataConnection>(info, peer, limited);
    }
    Identity identity{options_.identity.name, options_.identity.endpoint.value_or(local_)};
    if (request.mode == Mode::high_throughput) {
      HighThroughputSendOptions o;
      o.shared_pages = pool_;
      o.page_size = pool_->page_size();
      o.flush_timeout = options_.flush_timeout;
      o.send_timeout = options_.send_timeout;
      o.identity = identity;
      o.key = options_.admission.key;
      o.replies.max_size = 0;
      o.connect_timeout = connect_once;  // the subscriber listens already: a refusal fails the subscription at once
      return std::make_shared<DataConnection>(info, peer,
                                              std::make_unique<HighThroughputSendSocket>(context_, remote, o));
    }
    LowLatencySendOptions o;
    o.buffer_count = options_.low_latency_buffers;
    o.send_timeout = options_.send_timeout;
    o.identity = identity;
    o.key = options_.admission.key;
    o.replies.max_size = 0;
    o.connect_timeout = connect_once;
    return std::make_shared<DataConnection>(info, peer, std::make_unique<LowLatencySendSocket>(context_, remote, o));
  }

  // Acknowledges the subscriptions whose data connection came up; refuses those whose
  // failed (at once, with the reason) or did not come up within connect_timeout (and
  // forgets that connection).
  void poll_pending() {
    const auto now = std::chrono::steady_clock::now();
    std::vector<PendingAck> waiting;
    for (auto& p : pending_) {
      std::optional<Error> failure;
      if (p.connection->closed()) {
        answer(p.control, p.request_id, false, "the subscription was removed before its connection came up");
      } else if (p.connection->connect()) {
        answer(p.control, p.request_id, true, "");
      } else if ((failure = p.connection->failure()) || now - p.connection->opened_at() > options_.connect_timeout) {
        const std::string why =
            failure
                ? fmt::format("publisher {} could not connect to {}: {}", local_.to_string(),
                              p.connection->subscriber().endpoint.to_string(), failure->what())
                : fmt::format("publisher {} could not connect to {} within {} ms", local_.to_string(),
                              p.connection->subscriber().endpoint.to_string(),
                              std::chrono::duration_cast<std::chrono::milliseconds>(options_.connect_timeout).count());
        log(LogLevel::warn, "{}", why);
        table_.remove_connection(p.connection);
        p.connection->close();
        answer(p.control, p.request_id, false, why);
      } else {
        waiting.push_back(std::move(p));
      }
    }
    pending_ = std::move(waiting);
    pending_count_.store(pending_.size(), std::memory_order_release);
  }

  // An answer goes out after the ones before it to the same subscriber. One that finds the
  // reply window full (the subscriber's loop is busy; on libfabric a reply needs a receive
  // it has posted) waits here and is sent from the poll timer as room comes: a subscriber
  // waits for every answer, so losing one would hold its subscribe() until ack_timeout.
  // A subscriber that keeps asking and never reads makes us hold max_unsent_answers at
  // most; beyond that its answers are dropped, logged once.
  void answer(const Peer& peer, std::uint64_t request_id, bool accepted, std::string reason) {
    auto bytes = detail::encode(detail::SubscriptionAnswer{accepted, request_id, std::move(reason)});
    auto queued = unsent_answers_.find(peer.connection());
    if (queued == unsent_answers_.end()) {
      if (send_answer(peer, bytes) != Sent::no_room) return;
      queued = unsent_answers_.emplace(peer.connection(), UnsentAnswers{peer, {}, false}).first;
    }
    auto& unsent = queued->second;
    if (unsent.answers.size() >= max_unsent_answers) {
      if (!std::exchange(unsent.complained, true)) {
        log(LogLevel::warn, "publisher {}: {} is not taking its answers ({} wait); further answers are dropped",
            local_.to_string(), peer.to_string(), unsent.answers.size());
      }
      return;
    }
    unsent.answers.push_back(std::move(bytes));
    ensure_polling();
  }

  enum class Sent { yes, no_room, gone };
  Sent send_answer(const Peer& peer, std::span<const std::byte> bytes) {
    try {
      return peer.try_reply(bytes) ? Sent::yes : Sent::no_room;
    } catch (const Error& e) {
      log(LogLevel::debug, "publisher {}: cannot answer {}: {}", local_.to_string(), peer.to_string(), e.what());
      return Sent::gone;
    }
  }

  void send_unsent_answers() {
    for (auto it = unsent_answers_.begin(); it != unsent_answers_.end();) {
      auto& unsent = it->second;
      Sent sent = Sent::yes;
      while (!unsent.answers.empty() && (sent = send_answer(unsent.peer, unsent.answers.front())) == Sent::yes) {
        unsent.answers.pop_front();
      }
      it = unsent.answers.empty() || sent == Sent::gone ? unsent_answers_.erase(it) : std::next(it);
    }
  }

  // A subscriber's control connection went away: it left or died. Its data connections are
  // aborted, not flushed (nobody reads them any more, and a publish() waiting for their
  // room must not wait out send_timeout for a receiver that is gone); their pages go back
  // to the pool.
  void on_control_gone(const Peer& peer) {
    complained_.erase(peer.connection());
    unsent_answers_.erase(peer.connection());
    // Counted before its connections leave the table (only this thread changes it):
    // stats() read meanwhile never shows them gone and the loss not counted yet.
    const bool had_connections = table_.find(peer.connection(), Mode::low_latency) != nullptr ||
                                 table_.find(peer.connection(), Mode::high_throughput) != nullptr;
    if (had_connections) subscribers_lost_.fetch_add(1, std::memory_order_relaxed);
    const auto removed = table_.remove_owner(peer.connection());
    for (const auto& c : removed) c->abort("its subscriber's control connection closed");
    if (!removed.empty()) {
      log(LogLevel::info, "publisher {}: subscriber {} went away; its {} connection(s) closed", local_.to_string(),
          peer.to_string(), removed.size());
    }
  }

  // Every drop_report_interval: each route's drops since the last report go to its
  // subscriber. A tick without a new drop and with nothing left to retry looks at no route:
  // a publisher with 100,000s of routes would otherwise spend milliseconds of its loop on
  // every tick. (A drop counts itself in dropped_ after its route's count, so a drop that a
  // tick sees in dropped_ but misses in its route is there on the next tick, which runs.)
  void report_drops() {
    const auto dropped = dropped_.load(std::memory_order_relaxed);
    if (dropped == dropped_at_last_report_ && !report_again_) return;
    dropped_at_last_report_ = dropped;
    report_again_ = false;
    const auto routes = table_.routes();
    routes->for_each([&](Tag tag, const detail::RouteList& list) {
      for (const Route& r : list) {
        const auto n = r.counters->unreported.exchange(0, std::memory_order_relaxed);
        if (n == 0) continue;
        bool sent = false;
        try {
          sent = r.connection->control().try_reply(
              detail::encode(detail::DropReport{r.connection->subscriber().mode, tag, n}));
        } catch (const Error&) {
          continue;  // that subscriber is gone
        }
        if (!sent) {
          r.counters->unreported.fetch_add(n, std::memory_order_relaxed);  // next time
          report_again_ = true;
        }
      }
    });
  }

  Context context_;  // first, so it goes last: keeps the loop and back-ends allocated if the Context went
  PublishOptions options_;
  std::shared_ptr<PagePool> pool_;
  // Under max_connections: the data connections of each mode (low-latency, high-throughput).
  std::array<std::shared_ptr<MultiDestinationSendSocket>, 2> limited_;
  detail::SubscriptionTable table_;
  std::unique_ptr<LowLatencyReceiveSocket> control_;
  Endpoint local_;  // and limited_: set once in start(), before started_
  std::mutex started_mutex_;
  std::condition_variable started_changed_;
  bool started_ = false;
  bool started_seen_ = false;  // loop thread only
  // Loop thread only:
  std::vector<PendingAck> pending_;
  std::optional<EventLoop::TimerId> poll_timer_;
  struct UnsentAnswers {
    Peer peer;
    std::deque<std::vector<std::byte>> answers;  // encoded, oldest first
    bool complained = false;                     // its overflow was logged
  };
  static constexpr std::size_t max_unsent_answers = 1024;  // 4× what max_tags_per_subscriber's tags need
  std::unordered_map<ConnectionId, UnsentAnswers> unsent_answers_;
  EventLoop::TimerId drop_timer_ = 0;
  std::unordered_set<ConnectionId> complained_;
  // Any thread:
  std::atomic<bool> shut_down_{false};  // the PublishSocket is gone (its Publishers may not be)
  std::atomic<std::size_t> pending_count_{0};
  std::atomic<std::uint64_t> published_{0}, unrouted_{0}, deliveries_{0}, dropped_{0}, subscribers_lost_{0};
  detail::DropsByTag drops_by_tag_;           // for the metrics
  std::uint64_t dropped_at_last_report_ = 0;  // report_drops(), on the loop thread
  bool report_again_ = false;                 // a report found no room: try on the next tick
  mutable std::mutex publishers_mutex_;
  std::vector<std::shared_ptr<PublisherCounters>> publishers_;  // of the Publishers alive

 public:
  const detail::DropsByTag& drops_by_tag() const noexcept { return drops_by_tag_; }
  MetricsRegistry::Registration metrics;  // pubsub_metrics.hpp: removed first by ~PublishSocket
};

PublishSocket::PublishSocket(Context& context, const Endpoint& local, PublishOptions options)
    : impl_(std::make_shared<Impl>(context, std::move(options))) {
  impl_->start(local);
  impl_->metrics = detail::add_publish_metrics(
      context, impl_->local().to_string(), [impl = impl_.get()] { return impl->stats(); }, impl_->drops_by_tag());
}

PublishSocket::~PublishSocket() {
  impl_->metrics.reset();
  try {
    impl_->shutdown();
  } catch (const std::exception& e) {
    log(LogLevel::error, "publish socket {}: closing failed: {}", impl_->local().to_string(), e.what());
  }
}

void PublishSocket::publish(Tag tag, std::span<const std::byte> data) {
  impl_->throw_if_context_gone();
  impl_->publish(tag, data);
}

struct PublishSocket::Publisher::Kept {
  explicit Kept(std::shared_ptr<Impl> socket) : impl(std::move(socket)), counters(impl->add_publisher()) {}
  ~Kept() { impl->remove_publisher(counters); }
  Kept(const Kept&) = delete;
  Kept& operator=(const Kept&) = delete;

  std::shared_ptr<Impl> impl;
  std::shared_ptr<PublisherCounters> counters;
  detail::SubscriptionTable::VersionedRoutes routes;  // version 0: none taken yet
};

PublishSocket::Publisher PublishSocket::publisher() { return Publisher(impl_); }

PublishSocket::Publisher::Publisher(std::shared_ptr<Impl> impl) : kept_(std::make_unique<Kept>(std::move(impl))) {}
PublishSocket::Publisher::Publisher(Publisher&&) noexcept = default;
PublishSocket::Publisher& PublishSocket::Publisher::operator=(Publisher&&) noexcept = default;
PublishSocket::Publisher::~Publisher() = default;

void PublishSocket::Publisher::publish(Tag tag, std::span<const std::byte> data) {
  kept_->impl->throw_if_context_gone();
  Impl& impl = *kept_->impl;
  impl.publish_on(impl.current_routes(kept_->routes), tag, data, kept_->counters.get());
}

bool PublishSocket::Publisher::try_publish(Tag tag, std::span<const std::byte> data, PublishProgress& progress) {
  kept_->impl->throw_if_context_gone();
  Impl& impl = *kept_->impl;
  const auto& routes = impl.current_routes(kept_->routes);
  const bool started = progress.started_;
  progress.started_ = true;
  return impl.try_publish(tag, data, progress.pending_, started, &routes, kept_->counters.get());
}

bool PublishSocket::try_publish(Tag tag, std::span<const std::byte> data, PublishProgress& progress) {
  impl_->throw_if_context_gone();
  const bool started = progress.started_;
  progress.started_ = true;
  return impl_->try_publish(tag, data, progress.pending_, started);
}

void PublishSocket::flush() {
  impl_->throw_if_context_gone();
  impl_->flush();
}

bool PublishSocket::wait_for_subscriptions(std::size_t count, std::chrono::nanoseconds timeout) const {
  impl_->throw_if_context_gone();
  return impl_->wait_for_subscriptions(count, timeout);
}

bool PublishSocket::wait_for_subscribers(std::size_t count, std::chrono::nanoseconds timeout) const {
  impl_->throw_if_context_gone();
  return impl_->wait_for_subscribers(count, timeout);
}

Endpoint PublishSocket::local_endpoint() const { return impl_->local(); }
PublishStats PublishSocket::stats() const noexcept { return impl_->stats(); }
const PagePool& PublishSocket::pages() const noexcept { return impl_->pool(); }
ConnectionStats PublishSocket::connection_stats(Mode mode) const { return impl_->connection_stats(mode); }

}  // namespace netio::pubsub
