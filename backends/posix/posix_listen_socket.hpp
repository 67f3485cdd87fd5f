// SPDX-License-Identifier: MIT
// POSIX listen socket: accepts stream connections (TCP or Unix-domain: its StreamFamily),
// lets the family refuse a peer before anything of it is read, reads each one's hello, asks
// the layer above to accept or reject it, answers, and hands accepted connections over as
// receive sockets.
// A connection that sends junk or nothing within the handshake timeout is closed and logged;
// the listener keeps serving everyone else. At most ListenLimits::max_pending_handshakes
// connections wait for their hello: a new one beyond that drops the oldest. Out of
// descriptors (EMFILE, ENFILE) while a peer waits to be accepted, the listener first drops
// the oldest connection waiting for its handshake to make room, then asks the layer above to
// close an idle one (Callbacks::on_out_of_descriptors); with neither it stops polling its
// descriptor for accept_backoff (a loop timer), then tries again: no spinning, one log line
// per episode.
#pragma once

#include "backends/posix/handshake_reader.hpp"
#include "backends/posix/socket_fd.hpp"
#include "backends/posix/stream_family.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"
#include "rejection_log.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

namespace netio::posix {

class PosixListenSocket final : public LowLevelListenSocket {
 public:
  PosixListenSocket(EventLoop& loop, std::shared_ptr<const StreamFamily> family)
      : loop_(loop), family_(std::move(family)) {}
  ~PosixListenSocket() override { close(); }

  void listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) override;
  Endpoint local_endpoint() const override { return local_; }
  bool peers_are_processes() const noexcept override { return family_->peers_are_processes(); }
  void close() noexcept override;

 private:
  struct PendingConnection {
    SocketFd fd;
    Endpoint peer;
    HandshakeReader reader;
    EventLoop::TimerId timeout_timer = 0;
    std::uint64_t arrival = 0;  // in arrivals_
  };

  void on_acceptable();
  // Out of descriptors: frees one by dropping the oldest pending connection (true), or
  // backs off when there is none (false).
  bool make_room_for_descriptors(int error);
  bool peer_waiting() const;  // a connection in the kernel's accept queue
  // Frees what the family needs to set an accepted connection up (StreamFamily::
  // descriptors_to_set_up()) when the process is out of descriptors, as for an accept.
  void make_room_to_set_up();
  void resume_accepting();
  void end_pressure_episode();
  // A connection the family does not admit: answered with a reject naming `why`, then closed.
  void refuse(const SocketFd& fd, const std::string& why);
  void add_pending(SocketFd fd, const Endpoint& peer);
  void on_hello_readable(int fd);
  void drop_pending(int fd, const std::string& why);
  bool drop_oldest_pending(const std::string& why);  // false when none waits
  // Takes the connection out of the loop and the queue; closing it is the caller's (drop it).
  std::unique_ptr<PendingConnection> forget_pending(std::map<int, std::unique_ptr<PendingConnection>>::iterator it);
  void answer(std::unique_ptr<PendingConnection> pending);
  // A rejection answered after AcceptDecision::answer_after: the connection waits unread.
  void hold_rejection(SocketFd fd, std::vector<std::byte> reply, std::chrono::nanoseconds delay);
  void answer_held(std::uint64_t id);

  EventLoop& loop_;
  std::shared_ptr<const StreamFamily> family_;
  Callbacks callbacks_;
  ListenLimits limits_;
  Endpoint local_;
  SocketFd fd_;
  std::map<int, std::unique_ptr<PendingConnection>> pending_;
  // Pending connections in arrival order: (arrival, fd); entries whose connection went are
  // skipped (a descriptor number may come back for a newer connection, the arrival may not).
  std::deque<std::pair<std::uint64_t, int>> arrivals_;
  std::uint64_t next_arrival_ = 1;
  struct HeldRejection {
    SocketFd fd;
    std::vector<std::byte> reply;
    EventLoop::TimerId timer = 0;
  };
  std::map<std::uint64_t, HeldRejection> held_;  // by id, oldest first
  std::uint64_t next_held_ = 1;
  // Pressure episodes, each logged once at its start and once at its end (end_pressure_episode()).
  static constexpr std::chrono::seconds episode_quiet_period{1};
  RejectionLog rejections_;  // malformed requests, handshakes dropped: rate-limited warnings
  bool evicting_ = false;    // dropping the oldest waiting connections
  std::uint64_t evictions_ = 0;
  std::chrono::steady_clock::time_point last_eviction_{};
  bool out_of_descriptors_ = false;
  std::uint64_t descriptor_failures_ = 0;
  std::uint64_t backoffs_ = 0;
  std::chrono::steady_clock::time_point last_pressure_{};
  EventLoop::TimerId backoff_timer_ = 0;  // set while backing off
  bool closed_ = false;
};

}  // namespace netio::posix
