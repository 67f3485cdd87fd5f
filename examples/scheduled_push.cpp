// SPDX-License-Identifier: MIT
// Time-slice building with the scheduled-push pattern: 4 input nodes generate one
// contribution per time-slice, 4 compute nodes each build complete time-slices and consume
// them. Every node has its own netio::Context, as it would in its own process; here they
// share one process on loopback. DFS mode, with a DDE replica on compute node 0.
//
// Each compute node's consumer runs on a worker thread of its own, as analysis code would:
// the receiver hands each complete time-slice over as a Timeslice the worker keeps, and its
// buffer space (and the inputs' credits) come back when the worker is done with it. A
// consumer quick enough to run on the event-loop thread can take a TimesliceView instead
// (freed when its handler returns).
//
//   ./scheduled_push                         tcp://127.0.0.1, DFS
//   ./scheduled_push best-effort
//   ./scheduled_push dfs "fabric://127.0.0.1:0?provider=tcp"
#include <netio/context.hpp>
#include <netio/scheduled_push/timeslice_receiver.hpp>
#include <netio/scheduled_push/timeslice_sender.hpp>

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sp = netio::scheduled_push;
namespace ns = netio::scheduler;

namespace {

constexpr std::uint32_t input_nodes = 4;
constexpr std::uint32_t computes = 4;
constexpr std::uint64_t timeslices = 4000;

// What an input's read-out produces for time-slice t: a small header naming the input and
// t, then payload of a size that varies with both.
std::vector<std::byte> read_out(ns::InputIndex input, ns::TimesliceIndex t) {
  std::vector<std::byte> bytes(16 + (t * 37 + input * 101) % 4000);
  std::memcpy(bytes.data(), &input, sizeof input);
  std::memcpy(bytes.data() + 8, &t, sizeof t);
  return bytes;
}

// Checks that a time-slice holds one contribution of every input, on a thread of its own.
class Consumer {
 public:
  Consumer() : worker_([this] { run(); }) {}
  ~Consumer() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_one();
    worker_.join();
  }
  // The receiver's KeepingHandler, on its event-loop thread: queue and return at once.
  void keep(sp::Timeslice timeslice) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(timeslice));
    }
    ready_.notify_one();
  }
  std::uint64_t built() const { return built_; }
  std::uint64_t wrong() const { return wrong_; }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      ready_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      sp::Timeslice timeslice = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      check(timeslice.view());
      timeslice.release();  // (or let it go out of scope): frees its buffers, returns the credits
      lock.lock();
    }
  }
  void check(const sp::TimesliceView& timeslice) {
    for (ns::InputIndex i = 0; i < input_nodes; ++i) {
      const auto& part = timeslice.contributions[i];
      ns::InputIndex input = 0;
      ns::TimesliceIndex t = 0;
      std::memcpy(&input, part.data(), sizeof input);
      std::memcpy(&t, part.data() + 8, sizeof t);
      if (input != i || t != timeslice.index) ++wrong_;
    }
    ++built_;
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<sp::Timeslice> queue_;
  bool done_ = false;
  std::atomic<std::uint64_t> built_{0}, wrong_{0};
  std::thread worker_;  // last: starts once the rest is constructed
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode_name = argc > 1 ? argv[1] : "dfs";
  const auto base = netio::Endpoint::parse(argc > 2 ? argv[2] : "tcp://127.0.0.1:0");
  const ns::Mode mode = mode_name == "best-effort" ? ns::Mode::best_effort : ns::Mode::dfs;
  try {
    ns::SchedulerConfig config;
    config.input_count = input_nodes;
    config.compute_count = computes;
    config.timeslices_per_interval = 40;
    config.history_length = 4;  // laptop-scale intervals: proposals from the 5th interval on

    // Compute nodes: a consumer (worker thread) each, checking every time-slice.
    std::vector<std::unique_ptr<netio::Context>> contexts;
    std::vector<std::unique_ptr<Consumer>> consumers;
    std::atomic<std::uint64_t> incomplete{0};
    std::vector<std::unique_ptr<sp::TimesliceReceiver>> receivers;
    for (ns::ComputeIndex c = 0; c < computes; ++c) {
      consumers.push_back(std::make_unique<Consumer>());
      contexts.push_back(std::make_unique<netio::Context>());
      sp::TimesliceReceiverOptions options;
      options.config = config;
      options.compute = c;
      options.receive_buffer_bytes = 1 << 20;  // 64 credits per input of 4 KiB
      options.max_contribution_bytes = 4096;
      options.run_dde = mode == ns::Mode::dfs && c == 0;
      options.on_incomplete = [&](const sp::TimesliceView&) { ++incomplete; };
      receivers.push_back(std::make_unique<sp::TimesliceReceiver>(
          *contexts.back(), base,
          [consumer = consumers.back().get()](sp::Timeslice timeslice) { consumer->keep(std::move(timeslice)); },
          options));
    }

    // Input nodes: a generator thread each, pushing its contributions in time-slice order.
    std::vector<std::unique_ptr<sp::TimesliceSender>> senders;
    for (ns::InputIndex i = 0; i < input_nodes; ++i) {
      contexts.push_back(std::make_unique<netio::Context>());
      sp::TimesliceSenderOptions options;
      options.config = config;
      options.mode = mode;
      options.input = i;
      options.max_contribution_bytes = 4096;
      for (const auto& r : receivers) options.compute_endpoints.push_back(r->local_endpoint());
      if (auto dde = receivers[0]->dde_endpoint()) options.dde_endpoints.push_back(*dde);
      senders.push_back(std::make_unique<sp::TimesliceSender>(*contexts.back(), options));
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> generators;
    for (ns::InputIndex i = 0; i < input_nodes; ++i) {
      generators.emplace_back([&, i] {
        for (ns::TimesliceIndex t = 0; t < timeslices; ++t) senders[i]->push(t, read_out(i, t));
        senders[i]->finish();
      });
    }
    for (auto& g : generators) g.join();
    bool finished = true;
    for (auto& s : senders) finished = s->wait_finished(std::chrono::seconds(30)) && finished;
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::uint64_t proposals = 0;
    for (auto& s : senders) proposals += s->stats().proposals_taken;
    senders.clear();
    receivers.clear();  // no handler runs after this: the consumers can go
    std::uint64_t built = 0, wrong = 0;
    for (auto& c : consumers) {
      built += c->built();
      wrong += c->wrong();
    }
    consumers.clear();
    fmt::print("{} × {} ({}): {} time-slices built in {:.2f} s, {} incomplete, {} wrong; {} proposals taken\n",
               input_nodes, computes, ns::to_string(mode), built, seconds, incomplete.load(), wrong, proposals);
    return finished && built == timeslices && wrong == 0 && incomplete == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "scheduled_push: {}\n", e.what());
    return 2;
  }
}
