// SPDX-License-Identifier: MIT
// The sending end of a fabric connection: an active FI_EP_MSG endpoint that connects with
// the hello as connection data, and sends user buffers without copying them.
//
// Flow control: the accept carries the receiver's credit count (its posted receive
// buffers). Each send spends a credit; without credits, buffers queue here until a credit
// message comes back (see FabricReceiveSocket), so the receiver's queue never overruns.
// A few small receives stay posted for those messages. Sends are also bounded by the
// provider's transmit queue; -FI_EAGAIN leaves the buffer queued and retries after the
// next completion (or a short timer), never in a loop.
//
// Replies (accept_replies()): the connect data carries the window; the socket keeps
// `credits` reply receives of header + max_size bytes posted besides the credit-message
// receives (BackwardReceives). A reply is lent to the user; when it comes back its receive is
// re-posted and a reply credit is owed to the receiver, returned in the remote CQ data of the
// next user buffer, or, when the receiver runs low and no buffer goes out, in a control
// message of its own (fabric_wire.hpp). Such a message lands in one of the receiver's data
// receives, so the receiver posts one receive more than it announces as data credits and
// this socket always keeps one credit for control messages: reply credits flow even while
// the receiver holds all its data buffers.
#pragma once

#include "backends/fabric/backward_receives.hpp"
#include "backends/fabric/fabric_domain.hpp"
#include "backends/fabric/fabric_endpoint.hpp"
#include "backends/fabric/posting.hpp"
#include "backends/fabric/registered_block.hpp"
#include "netio/backend/backend.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netio::fabric {

class FabricSendSocket final : public LowLevelSendSocket, private FabricEndpoint::Handler {
 public:
  FabricSendSocket(EventLoop& loop, DomainCache& domains);
  ~FabricSendSocket() override;

  // Throws netio::Error for what no retry can fix: a host that does not resolve
  // (resolve_failed), no matching provider (provider_unavailable), a hello larger than the
  // provider's connection data (message_too_large), connect() called twice (closed).
  // Refused, rejected and failed connections arrive through on_connect_failed.
  // Before connect() only (throws Error(closed) after). Credits are clamped to at least one
  // and to what the provider's receive queue holds; max_size to 4 GiB - 1.
  void accept_replies(ReplyWindow window) override;
  void connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) override;
  // Never throws: a buffer larger than the peer takes fails the connection with
  // Error(message_too_large), an unregistered buffer when the provider needs FI_MR_LOCAL
  // with Error(backend_error), both through on_disconnected (from inside this call).
  // After close() or a failure the buffer is ignored (the caller still owns it).
  void send(Buffer* buffer) override;
  // Before connect(): the back-end's DeferredRegistrar; after: the registrar of the
  // socket's domain. Both stay valid as long as the back-end.
  MemoryRegistrar* registrar() noexcept override;
  bool sends_unregistered_memory() const noexcept override;
  // detail::kernel_tcp_write_limit on providers whose wire is a kernel TCP socket (tcp,
  // sockets): the tcp provider writes each buffer with one sendmsg(). No limit on the
  // others (verbs).
  std::size_t efficient_buffer_size() const noexcept override;
  void close() noexcept override;

 private:
  enum class State { idle, connecting, connected, failed, closed };
  static constexpr std::size_t credit_receives = 8;
  static constexpr std::size_t max_send_operations = 4096;  // cap on the provider's tx size
  static constexpr std::size_t completion_budget = 256;

  void set_up(const Endpoint& remote, std::span<const std::byte> hello);
  void drain();
  void pump();
  bool replies_taken() const noexcept { return reply_window_.max_size != 0; }
  void post_backward_receive(OperationContext& operation);
  void on_backward_message(OperationContext& operation, std::size_t length);
  void repost_returned_replies();
  void send_reply_credits();
  void report_injected();  // reports injected_ as completed, in order
  void complete_in_order();
  void fail_connect(Errc code, const std::string& why);
  void fail_connected(Errc code, const std::string& why);
  std::string describe() const;

  void on_completion(OperationContext& operation, const CompletionEntry& completion) override;
  void on_completion_error(const CompletionEntry& error) override;
  void on_connection_event(const EventEntry& event) override;
  void on_connection_error(const EventEntry& error) override;

  EventLoop& loop_;
  DomainCache& domains_;
  Endpoint remote_;
  std::optional<Endpoint> local_;
  Callbacks callbacks_;
  State state_ = State::idle;
  std::shared_ptr<Domain> domain_;
  std::unique_ptr<FabricEndpoint> endpoint_;
  std::shared_ptr<BackwardReceives> backward_;  // credit messages and replies
  std::vector<std::byte> connect_data_;         // kept until the connection is up: providers may read it late
  std::vector<OperationContext> send_operations_;
  std::vector<std::uint32_t> free_operations_;
  std::deque<OperationContext*> in_flight_;  // posted, in posting order
  std::deque<Buffer*> queued_;               // waiting for a credit or a transmit slot
  // Small buffers go out with fi_inject, which has no completion: they are reported done on
  // the next drain. Only when nothing else is in flight, so completions stay in order.
  std::deque<Buffer*> injected_;
  std::size_t inject_size_ = 0;  // the provider's limit for fi_inject (0: none)
  std::size_t efficient_buffer_size_ = std::numeric_limits<std::size_t>::max();
  std::uint64_t credits_ = 0;
  std::uint64_t credits_total_seen_ = 0;  // the receiver's running total, last seen
  std::size_t peer_max_buffer_size_ = 0;
  // Replies.
  ReplyWindow reply_window_;           // max_size 0: none taken
  std::uint64_t control_reserve_ = 0;  // credits kept for control messages (1 with replies)
  std::uint64_t replies_received_ = 0;
  std::uint64_t reply_credits_returned_ = 0;     // reply receives re-posted after the user gave them back
  std::uint64_t reply_credits_announced_ = 0;    // the running total last sent to the receiver
  std::vector<std::uint32_t> returned_replies_;  // scratch for BackwardReceives::take_returned
  struct Failure {
    Errc code;
    std::string why;
  };
  std::optional<Failure> pending_failure_;  // a connect() failure, reported from the loop
  CanceledOperations canceled_;             // FI_ECANCELED seen: the grace for the reason to come
  bool pumping_ = false;
};

}  // namespace netio::fabric
