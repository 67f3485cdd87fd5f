// SPDX-License-Identifier: MIT
// The receiving end of one fabric connection, created by FabricListenSocket for an
// accepted connection request.
//
// Flow control: every receive buffer is posted before fi_accept, and the accept tells the
// sender how many there are: its credits. The sender spends one credit per buffer it
// sends, so the receive queue never overruns. When the user gives a ReceivedBuffer back,
// the buffer is re-posted, and its credit goes back to the sender in a small credit message
// on the same (bidirectional) libfabric endpoint once the sender runs low (credit_policy.hpp);
// at most one is in flight at a time, and later returns are merged into the next one. A
// user who holds every buffer stalls the sender, which is how back-pressure travels.
//
// Replies: when the sender declared a reply window (connect data), one more receive buffer
// is posted for its control messages, and send_reply() copies each reply behind a 16-byte
// header (fabric_wire.hpp) into a slot of this socket's own registered block, or sends it with
// fi_inject when it is that small; the caller's buffer completes (on_reply_completed, in
// order) as soon as it is copied. reply_registrar() is therefore nullptr: reply buffers need
// no registration. A reply spends a reply credit; without one replies wait here, in order.
// Credits come back in the remote CQ data of the sender's messages: with every user buffer,
// and in control messages that take a data receive and are re-posted at once, never
// delivered. Every reply carries the data credits returned so far, sparing credit messages.
#pragma once

#include "backends/fabric/fabric_endpoint.hpp"
#include "backends/fabric/posting.hpp"
#include "backends/fabric/receive_buffers.hpp"
#include "backends/fabric/registered_block.hpp"
#include "netio/backend/backend.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace netio::fabric {

class FabricReceiveSocket final : public LowLevelReceiveSocket, private FabricEndpoint::Handler {
 public:
  // Called once, from the socket's own drain: when the connection is established (error is
  // null) or when it failed before. The listener hands the socket over, or discards it.
  using EstablishedHook = std::function<void(FabricReceiveSocket& socket, const Error* error)>;

  // Opens the endpoint for the connection request `request` (consuming its handle).
  // Throws netio::Error.
  // `replies`: the sender's reply window (max_size 0: it takes none).
  FabricReceiveSocket(EventLoop& loop, std::shared_ptr<Domain> domain, const fi_info& request, Endpoint local,
                      Endpoint peer, std::shared_ptr<ReceiveBuffers> buffers, ReplyWindow replies,
                      EstablishedHook hook);
  ~FabricReceiveSocket() override;

  // Posts every receive buffer, then accepts (fi_accept) with the buffer size and count.
  // Throws netio::Error; the caller then closes the socket.
  void accept(std::span<const std::byte> extra = {});

  void start(Callbacks callbacks) override;
  const Endpoint& peer() const noexcept override { return peer_; }
  std::size_t max_reply_size() const noexcept override { return replies_.max_size; }
  // The pages messages have written into the posted buffers (their memory is backed as it is
  // written); where the provider pins registered memory (FI_MR_LOCAL) the listener charges
  // every posted buffer up front instead.
  std::size_t bytes_held() const noexcept override { return buffers_->bytes_filled(); }
  // Always nullptr: replies are copied into registered memory of this socket.
  MemoryRegistrar* reply_registrar() noexcept override { return nullptr; }
  void send_reply(Buffer* buffer) override;
  void close() noexcept override;

 private:
  enum class State { accepting, established, failed };
  static constexpr std::size_t completion_budget = 64;  // per drain, then others get a turn
  static constexpr std::size_t max_reply_slots = 8;     // replies in flight that fi_inject cannot take
  static constexpr std::size_t max_reply_slot_memory = std::size_t{1} << 20;

  void drain();
  void deliver(Buffer* buffer);
  void deliver_undelivered();
  void repost_returned();
  bool post_receive(OperationContext& operation);
  void send_credits();
  bool repost(OperationContext& operation);  // false: the connection failed
  bool take_control_data(std::uint64_t data, std::size_t length, bool& is_control);
  void pump_replies();
  void report_replies_sent();
  void fail(Errc code, const std::string& why);
  // Reports the failure from a later drain, never from inside the caller's call.
  void fail_later(Errc code, const std::string& why);
  std::string describe() const;

  void on_completion(OperationContext& operation, const CompletionEntry& completion) override;
  void on_completion_error(const CompletionEntry& error) override;
  void on_connection_event(const EventEntry& event) override;
  void on_connection_error(const EventEntry& error) override;

  EventLoop& loop_;
  Endpoint local_;
  Endpoint peer_;
  std::shared_ptr<ReceiveBuffers> buffers_;
  std::unique_ptr<FabricEndpoint> endpoint_;
  std::unique_ptr<RegisteredBlock> credit_block_;
  std::vector<std::byte> accept_data_;  // kept while connecting: providers may read it late
  OperationContext credit_operation_;
  EstablishedHook hook_;
  Callbacks callbacks_;
  State state_ = State::accepting;
  bool closed_ = false;  // close() ran: nothing more happens
  bool started_ = false;
  bool connected_ = false;                   // FI_CONNECTED seen: credits may flow
  std::deque<Buffer*> undelivered_;          // received before start(), or behind one that was
  std::optional<Error> pending_disconnect_;  // a failure to report once undelivered_ is empty
  std::vector<Buffer*> returned_;            // scratch for ReceiveBuffers::take_returned
  std::vector<OperationContext*> repost_later_;
  std::uint64_t credits_returned_ = 0;   // buffers re-posted since the connection started
  std::uint64_t credits_announced_ = 0;  // the running total last sent to the peer
  std::uint64_t received_ = 0;           // data messages received since the connection started
  bool credit_in_flight_ = false;
  CanceledOperations canceled_;  // FI_ECANCELED seen: the grace for the reason to come
  // Replies.
  ReplyWindow replies_;
  std::size_t reply_slot_size_ = 0;
  std::shared_ptr<Domain> reply_domain_;
  std::unique_ptr<RegisteredBlock> reply_block_;    // slots for replies fi_inject cannot take, from the first
  std::vector<OperationContext> reply_operations_;  // one per slot
  std::vector<std::uint32_t> free_reply_slots_;
  std::vector<std::byte> inject_scratch_;  // header + payload for fi_inject (copied at once)
  std::deque<Buffer*> replies_queued_;     // waiting for a reply credit, a slot or the transmit queue
  std::deque<Buffer*> replies_sent_;       // copied and posted: reported completed from the next drain
  std::uint64_t reply_credits_ = 0;        // replies the sender takes now
  std::uint64_t replies_posted_ = 0;       // since the connection started
  std::uint64_t reply_credits_seen_ = 0;   // the sender's running total of returned reply credits
};

}  // namespace netio::fabric
