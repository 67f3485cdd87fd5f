// SPDX-License-Identifier: MIT
#include "netio/high_throughput_socket.hpp"

#include "budget_charge.hpp"
#include "introduction.hpp"
#include "message_access.hpp"
#include "netio/log.hpp"
#include "page_format.hpp"
#include "peer_state.hpp"
#include "receive_connections.hpp"
#include "socket_metrics.hpp"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace netio {

// Pages are queued by the loop thread as they arrive and parsed by whichever user thread
// calls recv(): the loop thread never touches message contents.
class HighThroughputReceiveSocket::Impl {
 public:
  Impl(Context& context, const Endpoint& local, const HighThroughputReceiveOptions& options)
      : context_(detail::share_context(context)),
        options_(options),
        budget_(detail::budget_from(options.shared_budget, options.memory_budget)),
        connections_(context, local, detail::SocketKind::high_throughput_send, "a high-throughput receive socket",
                     callbacks(), options.events, stats_, options.reply_window, budget_,
                     /*reassembly_buffer=*/true, options.admission) {}

  void throw_if_context_gone() const {
    detail::throw_if_context_gone(context_, [this] {
      return fmt::format("the high-throughput receive socket at {}", connections_.local_endpoint().to_string());
    });
  }

  ~Impl() {
    // Pages still queued go back to the back-end before the connections close.
    std::lock_guard lock(queue_mutex_);
    queue_.clear();
  }

  detail::ReceiveConnections::Callbacks callbacks() {
    detail::ReceiveConnections::Callbacks c;
    c.decide = [this](const detail::Hello& hello) {
      if (hello.buffer_size == 0 || hello.buffer_size > options_.max_page_size) {
        throw Error(Errc::handshake_rejected,
                    fmt::format("page size {} is not within 1 .. {} bytes", hello.buffer_size, options_.max_page_size));
      }
      // The introduction travels as a buffer too: room for it whatever the page size.
      return AcceptDecision::accept(std::max<std::size_t>(hello.buffer_size, detail::max_introduction_size),
                                    options_.page_credits);
    };
    c.on_data = [this](const std::shared_ptr<const detail::PeerState>& peer, ReceivedBuffer page) {
      stats_.pages().fetch_add(1, std::memory_order_relaxed);
      push({peer->connection, std::make_shared<HeldPage>(std::move(page), Peer(peer)), peer->reassembly_allowance});
    };
    c.on_disconnected = [this](std::uint64_t connection, const Error&) { push({connection, nullptr}); };
    return c;
  }

  // A received page and the peer it came from: what a Message's keep-alive holds.
  struct HeldPage {
    HeldPage(ReceivedBuffer b, Peer p) : buffer(std::move(b)), peer(std::move(p)) {}
    ReceivedBuffer buffer;
    Peer peer;
  };

  // A page, or (page == nullptr) the end of a connection.
  struct QueuedPage {
    std::uint64_t connection = 0;
    std::shared_ptr<HeldPage> page;
    std::size_t reassembly_allowance = 0;  // the connection's, counted with its buffers
  };

  void push(QueuedPage entry) {
    {
      std::lock_guard lock(queue_mutex_);
      queue_.push_back(std::move(entry));
    }
    queue_changed_.notify_one();
  }

  // A deadline read from the clock only when someone has to wait: recv() of a message that
  // is already there costs no clock read.
  class LazyDeadline {
   public:
    explicit LazyDeadline(std::chrono::nanoseconds timeout) noexcept : timeout_(timeout) {}
    std::chrono::steady_clock::time_point get() {
      if (!deadline_) deadline_ = std::chrono::steady_clock::now() + timeout_;
      return *deadline_;
    }

   private:
    std::chrono::nanoseconds timeout_;
    std::optional<std::chrono::steady_clock::time_point> deadline_;
  };

  // Lets one consumer at a time parse, waiting until the deadline for its turn.
  class ConsumerTurn {
   public:
    ConsumerTurn(Impl& impl, LazyDeadline& deadline) : impl_(impl) {
      acquired_ = impl_.consumer_.try_lock();  // the common case: one consumer, one CAS
      if (acquired_) return;
      std::unique_lock lock(impl_.turn_mutex_);
      ++impl_.turn_waiters_;
      while (!(acquired_ = impl_.consumer_.try_lock())) {
        if (impl_.turn_free_.wait_until(lock, deadline.get()) == std::cv_status::timeout) {
          acquired_ = impl_.consumer_.try_lock();
          break;
        }
      }
      --impl_.turn_waiters_;
    }
    ~ConsumerTurn() {
      if (!acquired_) return;
      impl_.consumer_.unlock();
      // Waiters count themselves under turn_mutex_ before they wait, so taking it here
      // cannot miss one.
      if (impl_.turn_waiters_.load(std::memory_order_seq_cst) != 0) {
        std::lock_guard lock(impl_.turn_mutex_);
        impl_.turn_free_.notify_one();
      }
    }
    ConsumerTurn(const ConsumerTurn&) = delete;
    ConsumerTurn& operator=(const ConsumerTurn&) = delete;
    bool acquired() const noexcept { return acquired_; }

   private:
    Impl& impl_;
    bool acquired_ = false;
  };

  // On the loop thread nothing may wait: pages arrive on that very thread.
  std::chrono::nanoseconds waitable(std::chrono::nanoseconds timeout) {
    return connections_.loop().in_loop_thread() ? std::chrono::nanoseconds::zero() : timeout;
  }

  std::optional<Message> recv(std::chrono::nanoseconds timeout) {
    LazyDeadline deadline(waitable(timeout));
    const ConsumerTurn turn(*this, deadline);
    if (!turn.acquired()) return std::nullopt;
    for (;;) {
      if (current_.page && next_in_current_page()) {
        auto& parser = *current_parser_;
        // The Message points at the Peer of the page its keep-alive holds.
        const Peer& peer = current_.page->peer;
        std::optional<Message> message;
        if (parser.reassembled()) {
          message.emplace(reassembled_message(parser, peer));
        } else if (const auto& joined = parser.joined_page()) {
          message.emplace(
              detail::MessageAccess::make(parser.view(), joined, &static_cast<const HeldPage*>(joined.get())->peer));
        } else {
          message.emplace(
              detail::MessageAccess::make(parser.view(), std::shared_ptr<const void>(current_.page), &peer));
        }
        // The page goes back with its last message, not at the next recv(): over shm:// it
        // is the sender's, which waits for it.
        if (parser.release_finished_page()) current_.page.reset();
        return message;
      }
      if (!pop_page(deadline)) return std::nullopt;
    }
  }

  std::size_t recv_each(std::size_t max, std::chrono::nanoseconds timeout, const PeerVisitor& handler) {
    LazyDeadline deadline(waitable(timeout));
    const ConsumerTurn turn(*this, deadline);
    if (!turn.acquired()) return 0;
    LazyDeadline no_wait(std::chrono::nanoseconds::zero());
    std::size_t handled = 0;
    while (handled < max) {
      if (current_.page && next_in_current_page()) {
        ++handled;
        auto& parser = *current_parser_;
        const Peer& peer = current_.page->peer;
        const bool more = handler(parser.view(), peer);
        if (parser.reassembled()) parser.recycle_reassembled();
        if (parser.release_finished_page()) current_.page.reset();
        if (!more) break;
        continue;
      }
      // Only the first message is waited for; after it, what is queued already.
      if (!pop_page(handled == 0 ? deadline : no_wait)) break;
    }
    return handled;
  }

  // True when the parser holds the next message of the current page (view(), or
  // take_reassembled()); false when the page is done or its sender was dropped.
  bool next_in_current_page() {
    auto& parser = *current_parser_;
    switch (parser.next()) {
      case detail::PageParser::Result::message:
        stats_.add_message_single_writer(parser.view().size());  // consumers take turns
        return true;
      case detail::PageParser::Result::need_page: current_.page.reset(); return false;
      case detail::PageParser::Result::error:
        connections_.drop(current_.connection, parser.error());
        dropped_.insert(current_.connection);
        parsers_.erase(current_.connection);
        current_.page.reset();
        return false;
    }
    return false;
  }

  bool pop_page(LazyDeadline& deadline) {
    QueuedPage entry;
    {
      std::unique_lock lock(queue_mutex_);
      if (queue_.empty() && !queue_changed_.wait_until(lock, deadline.get(), [this] { return !queue_.empty(); })) {
        return false;
      }
      entry = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!entry.page) {  // the connection ended
      if (const auto it = parsers_.find(entry.connection); it != parsers_.end()) {
        if (it->second.mid_message()) {
          log(LogLevel::warn,
              "receive socket {}: a sender vanished in the middle of a message; the partial "
              "message is discarded",
              connections_.local_endpoint().to_string());
        }
        parsers_.erase(it);
      }
      dropped_.erase(entry.connection);
      return true;
    }
    if (dropped_.count(entry.connection) != 0) return true;  // pages in flight from a dropped peer
    current_ = std::move(entry);
    current_parser_ = &parser_for(current_.connection, current_.reassembly_allowance);
    current_parser_->set_page(current_.page->buffer.bytes(), current_.page->buffer.spare(), current_.page);
    return true;
  }

  detail::PageParser& parser_for(std::uint64_t connection, std::size_t reassembly_allowance) {
    return parsers_
        .try_emplace(connection, options_.max_message_size, budget_, reassembly_allowance, reassembly_spare_.get())
        .first->second;
  }

  // A reassembled message for recv(): it owns its memory, which goes back to the spare when
  // the Message is destroyed (on any thread; freed instead if the socket is gone).
  Message reassembled_message(detail::PageParser& parser, const Peer& peer) {
    struct Owned {
      std::vector<std::byte> bytes;
      Peer peer;
      std::weak_ptr<detail::ReassemblySpare> spare;
      std::shared_ptr<ReceiveBudget> budget;
      ~Owned() {
        if (const auto kept = spare.lock()) kept->keep(std::move(bytes), detail::BudgetCharge(std::move(budget)));
      }
    };
    auto owned = std::make_shared<Owned>();
    owned->bytes = parser.take_reassembled();
    owned->peer = peer;
    owned->spare = reassembly_spare_;
    owned->budget = budget_;
    const std::span<const std::byte> view(owned->bytes);
    const Peer* owned_peer = &owned->peer;
    return detail::MessageAccess::make(view, std::move(owned), owned_peer);
  }

  // First, so it goes last: the pages queued below go back to a back-end that still exists.
  Context context_;
  HighThroughputReceiveOptions options_;
  std::shared_ptr<ReceiveBudget> budget_;
  StatsCounters stats_;

  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;
  std::deque<QueuedPage> queue_;  // guarded by queue_mutex_

  // One consumer parses at a time (try_lock and a condition variable, not a timed_mutex:
  // TSan cannot follow those).
  std::mutex consumer_;  // held by the consumer whose turn it is; guards what follows
  std::mutex turn_mutex_;
  std::condition_variable turn_free_;
  std::atomic<int> turn_waiters_{0};  // changed under turn_mutex_
  QueuedPage current_;
  detail::PageParser* current_parser_ = nullptr;  // the parser of current_'s connection
  // Shared by the parsers; recv()'s messages give their memory back to it.
  std::shared_ptr<detail::ReassemblySpare> reassembly_spare_ = std::make_shared<detail::ReassemblySpare>();
  std::map<std::uint64_t, detail::PageParser> parsers_;
  std::set<std::uint64_t> dropped_;

  detail::ReceiveConnections connections_;  // closed first, before the queue goes
  MetricsRegistry::Registration metrics_;   // last: removed before anything it reads goes
};

HighThroughputReceiveSocket::HighThroughputReceiveSocket(Context& context, const Endpoint& local,
                                                         HighThroughputReceiveOptions options)
    : impl_(std::make_shared<Impl>(context, local, options)) {
  impl_->metrics_ = detail::add_socket_metrics(
      context, "high_throughput_receive", local_endpoint().to_string(), impl_->stats_,
      detail::ReceiveGauges{impl_->budget_, options.shared_budget != nullptr, impl_->connections_.replies_queued()});
}

HighThroughputReceiveSocket::~HighThroughputReceiveSocket() {
  EventLoop& loop = impl_->connections_.loop();
  if (!loop.in_loop_thread()) return;  // ~Impl closes on the loop thread and waits for it
  // Possibly inside a ConnectionEvents callback, on a back-end socket's stack: stop every
  // callback now, free the sockets in a task.
  impl_->connections_.close();
  loop.post([impl = std::move(impl_)] {});
}

std::optional<Message> HighThroughputReceiveSocket::recv(std::chrono::nanoseconds timeout) {
  impl_->throw_if_context_gone();
  return impl_->recv(timeout);
}
std::optional<Message> HighThroughputReceiveSocket::try_recv() {
  impl_->throw_if_context_gone();
  return impl_->recv(std::chrono::nanoseconds::zero());
}
std::size_t HighThroughputReceiveSocket::recv_each(std::size_t max, std::chrono::nanoseconds timeout,
                                                   const PeerVisitor& handler) {
  impl_->throw_if_context_gone();
  return impl_->recv_each(max, timeout, handler);
}
std::size_t HighThroughputReceiveSocket::recv_each(std::size_t max, std::chrono::nanoseconds timeout,
                                                   const Visitor& handler) {
  impl_->throw_if_context_gone();
  return impl_->recv_each(max, timeout,
                          [&handler](std::span<const std::byte> message, const Peer&) { return handler(message); });
}
Endpoint HighThroughputReceiveSocket::local_endpoint() const { return impl_->connections_.local_endpoint(); }
SocketStats HighThroughputReceiveSocket::stats() const noexcept { return impl_->stats_.snapshot(); }
const ReceiveBudget& HighThroughputReceiveSocket::memory_budget() const noexcept { return *impl_->budget_; }

}  // namespace netio
