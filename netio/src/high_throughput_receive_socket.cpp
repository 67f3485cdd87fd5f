#include "netio/high_throughput_socket.hpp"

#include "netio/log.hpp"
#include "page_format.hpp"
#include "receive_connections.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace netio {

// Pages are queued by the loop thread as they arrive and parsed by whichever user thread
// calls recv(): the loop thread never touches message contents.
class HighThroughputReceiveSocket::Impl {
 public:
  Impl(Context& context, const Endpoint& local, const HighThroughputReceiveOptions& options)
      : options_(options),
        connections_(context, local, detail::SocketKind::high_throughput_send, "a high-throughput receive socket",
                     callbacks(), options.events, stats_) {}

  ~Impl() {
    // Pages still queued go back to the back-end before the connections close.
    std::lock_guard lock(queue_mutex_);
    queue_.clear();
  }

  detail::ReceiveConnections::Callbacks callbacks() {
    detail::ReceiveConnections::Callbacks c;
    c.decide = [this](const detail::Hello& hello) {
      if (hello.buffer_size == 0 || hello.buffer_size > options_.max_page_size) {
        throw Error(Errc::handshake_rejected, fmt::format("page size {} is not within 1 .. {} bytes",
                                                          hello.buffer_size, options_.max_page_size));
      }
      return AcceptDecision::accept(hello.buffer_size, options_.page_credits);
    };
    c.on_data = [this](std::uint64_t connection, const Endpoint&, ReceivedBuffer page) {
      stats_.pages().fetch_add(1, std::memory_order_relaxed);
      push({connection, std::make_shared<ReceivedBuffer>(std::move(page))});
    };
    c.on_disconnected = [this](std::uint64_t connection, const Error&) { push({connection, nullptr}); };
    return c;
  }

  // A page, or (page == nullptr) the end of a connection.
  struct QueuedPage {
    std::uint64_t connection = 0;
    std::shared_ptr<ReceivedBuffer> page;
  };

  void push(QueuedPage entry) {
    {
      std::lock_guard lock(queue_mutex_);
      queue_.push_back(std::move(entry));
    }
    queue_changed_.notify_one();
  }

  // Lets one consumer at a time parse, waiting until `deadline` for its turn.
  class ConsumerTurn {
   public:
    ConsumerTurn(Impl& impl, std::chrono::steady_clock::time_point deadline) : impl_(impl) {
      std::unique_lock lock(impl_.turn_mutex_);
      acquired_ = impl_.turn_free_.wait_until(lock, deadline, [this] { return !impl_.consumer_busy_; });
      if (acquired_) impl_.consumer_busy_ = true;
    }
    ~ConsumerTurn() {
      if (!acquired_) return;
      {
        std::lock_guard lock(impl_.turn_mutex_);
        impl_.consumer_busy_ = false;
      }
      impl_.turn_free_.notify_one();
    }
    ConsumerTurn(const ConsumerTurn&) = delete;
    ConsumerTurn& operator=(const ConsumerTurn&) = delete;
    bool acquired() const noexcept { return acquired_; }

   private:
    Impl& impl_;
    bool acquired_ = false;
  };

  std::optional<Message> recv(std::chrono::steady_clock::time_point deadline) {
    const ConsumerTurn turn(*this, deadline);
    if (!turn.acquired()) return std::nullopt;
    for (;;) {
      if (current_.page) {
        if (auto message = next_in_current_page()) return message;
      }
      if (!pop_page(deadline)) return std::nullopt;
    }
  }

  std::optional<Message> next_in_current_page() {
    auto& parser = parser_for(current_.connection);
    switch (parser.next()) {
      case detail::PageParser::Result::message: {
        stats_.add_message(parser.view().size());
        if (parser.reassembled()) return Message(parser.take_reassembled());
        return Message(parser.view(), std::shared_ptr<const void>(current_.page));
      }
      case detail::PageParser::Result::need_page:
        current_.page.reset();
        return std::nullopt;
      case detail::PageParser::Result::error:
        connections_.drop(current_.connection, parser.error());
        dropped_.insert(current_.connection);
        parsers_.erase(current_.connection);
        current_.page.reset();
        return std::nullopt;
    }
    return std::nullopt;
  }

  bool pop_page(std::chrono::steady_clock::time_point deadline) {
    QueuedPage entry;
    {
      std::unique_lock lock(queue_mutex_);
      if (!queue_changed_.wait_until(lock, deadline, [this] { return !queue_.empty(); })) return false;
      entry = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!entry.page) {  // the connection ended
      if (const auto it = parsers_.find(entry.connection); it != parsers_.end()) {
        if (it->second.mid_message()) {
          log(LogLevel::warn, "receive socket {}: a sender vanished in the middle of a message; the partial "
              "message is discarded", connections_.local_endpoint().to_string());
        }
        parsers_.erase(it);
      }
      dropped_.erase(entry.connection);
      return true;
    }
    if (dropped_.count(entry.connection) != 0) return true;  // pages in flight from a dropped peer
    current_ = std::move(entry);
    parser_for(current_.connection).set_page(current_.page->bytes());
    return true;
  }

  detail::PageParser& parser_for(std::uint64_t connection) {
    return parsers_.try_emplace(connection, options_.max_message_size).first->second;
  }

  HighThroughputReceiveOptions options_;
  StatsCounters stats_;

  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;
  std::deque<QueuedPage> queue_;  // guarded by queue_mutex_

  // One consumer parses at a time (a flag, not a timed_mutex: TSan cannot follow those).
  std::mutex turn_mutex_;
  std::condition_variable turn_free_;
  bool consumer_busy_ = false;  // guarded by turn_mutex_; while set, the holder owns what follows
  QueuedPage current_;
  std::map<std::uint64_t, detail::PageParser> parsers_;
  std::set<std::uint64_t> dropped_;

  detail::ReceiveConnections connections_;  // last: closed first, before the queue goes
};

HighThroughputReceiveSocket::HighThroughputReceiveSocket(Context& context, const Endpoint& local,
                                                         HighThroughputReceiveOptions options)
    : impl_(std::make_shared<Impl>(context, local, options)) {}

HighThroughputReceiveSocket::~HighThroughputReceiveSocket() = default;

std::optional<Message> HighThroughputReceiveSocket::recv(std::chrono::nanoseconds timeout) {
  return impl_->recv(std::chrono::steady_clock::now() + timeout);
}
std::optional<Message> HighThroughputReceiveSocket::try_recv() { return impl_->recv(std::chrono::steady_clock::now()); }
Endpoint HighThroughputReceiveSocket::local_endpoint() const { return impl_->connections_.local_endpoint(); }
SocketStats HighThroughputReceiveSocket::stats() const noexcept { return impl_->stats_.snapshot(); }

}  // namespace netio
