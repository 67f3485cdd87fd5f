// SPDX-License-Identifier: MIT
// The scheduled push: netio.TimesliceReceiver (a compute node: a handler per complete
// time-slice, or recv() and a for loop over kept ones) and netio.TimesliceSender (an input node).
#include "held_socket.hpp"

#include "netio/scheduled_push/timeslice_receiver.hpp"
#include "netio/scheduled_push/timeslice_sender.hpp"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <condition_variable>
#include <deque>
#include <mutex>

namespace netio::python {

namespace {

namespace sp = netio::scheduled_push;

/// Complete time-slices kept for recv() (the receiver made without a handler). Bounded by the
/// credits: while Python holds the receive buffer, the inputs wait.
struct TimesliceQueue {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<sp::Timeslice> items;

  std::optional<sp::Timeslice> pop(nanoseconds timeout) {
    std::unique_lock lock(mutex);
    if (!ready.wait_for(lock, timeout, [&] { return !items.empty(); })) return std::nullopt;
    sp::Timeslice next = std::move(items.front());
    items.pop_front();
    return next;
  }
};

class PyTimesliceReceiver : public HeldSocket<sp::TimesliceReceiver> {
 public:
  template <typename... Args>
  PyTimesliceReceiver(std::shared_ptr<TimesliceQueue> queue, Args&&... args)
      : HeldSocket<sp::TimesliceReceiver>(std::forward<Args>(args)...), queue_(std::move(queue)) {}
  /// Null with a handler.
  const std::shared_ptr<TimesliceQueue>& queue() const noexcept { return queue_; }

 private:
  std::shared_ptr<TimesliceQueue> queue_;
};
using Sender = HeldSocket<sp::TimesliceSender>;

/// A time-slice for Python: index, whether complete, its contributions (one per input).
/// Kept (recv()): `parts` holds a LentBuffer per contribution, each keeping the Timeslice;
/// given to a handler: `parts` holds memoryviews valid during the call.
struct PyTimeslice {
  scheduler::TimesliceIndex index = 0;
  bool complete = true;
  std::uint32_t attempt = 0;
  std::vector<bool> contributed;
  double first_arrival = 0;  ///< seconds on this node's steady clock
  double last_arrival = 0;
  bool kept = false;
  py::list parts;

  py::list contributions() const {
    if (!kept) return parts;
    py::list views;
    for (const py::handle part : parts) views.append(memoryview_of(py::reinterpret_borrow<py::object>(part)));
    return views;
  }
  void release() {
    if (!kept) return;
    for (const py::handle part : parts) part.cast<Lent&>().release();
  }
};

double seconds(nanoseconds t) { return std::chrono::duration<double>(t).count(); }

PyTimeslice describe(const sp::TimesliceView& view) {
  PyTimeslice result;
  result.index = view.index;
  result.complete = view.complete;
  result.attempt = view.attempt;
  for (const auto flag : view.contributed) result.contributed.push_back(flag != 0);
  result.first_arrival = seconds(view.first_arrival);
  result.last_arrival = seconds(view.last_arrival);
  return result;
}

py::object make_kept(sp::Timeslice timeslice) {
  auto held = std::make_shared<sp::Timeslice>(std::move(timeslice));
  const auto& view = held->view();
  PyTimeslice result = describe(view);
  result.kept = true;
  for (std::size_t input = 0; input < view.contributions.size(); ++input)
    result.parts.append(make_lent(Lent{view.contributions[input], held, 0, false,
                                       fmt::format("contribution {} of time-slice {}", input, view.index)}));
  return py::cast(std::move(result));
}

/// A handler of TimesliceView for a Python callable: a PyTimeslice whose views end with the call.
sp::TimesliceReceiver::Handler view_handler(SharedCallable callable, const char* where) {
  return [callable, where](const sp::TimesliceView& view) {
    if (interpreter_finalizing()) return;
    py::gil_scoped_acquire gil;
    PyTimeslice timeslice = describe(view);
    for (const auto contribution : view.contributions) timeslice.parts.append(call_view(contribution, where));
    const py::list views = timeslice.parts;
    try {
      (*callable)(py::cast(std::move(timeslice)));
    } catch (py::error_already_set& error) {
      error.discard_as_unraisable(where);
    }
    for (const py::handle view_object : views) end_call_view(py::reinterpret_borrow<py::object>(view_object));
  };
}

scheduler::SchedulerConfig config_of(std::uint32_t input_count, std::uint32_t compute_count,
                                     std::optional<std::uint64_t> timeslices_per_interval,
                                     scheduler::Assignment assignment) {
  scheduler::SchedulerConfig config;
  config.input_count = input_count;
  config.compute_count = compute_count;
  config.assignment = assignment;
  if (timeslices_per_interval) config.timeslices_per_interval = *timeslices_per_interval;
  return config;
}

std::optional<py::object> next_kept(PyTimesliceReceiver& receiver, Timeout timeout) {
  const auto& queue = receiver.queue();
  if (!queue)
    throw netio::Error(netio::Errc::invalid_option,
                       receiver.what() + ": made with a handler, its time-slices go there (recv() needs none)");
  std::optional<sp::Timeslice> next;
  wait_in_slices(timeout, [&](nanoseconds slice) {
    receiver.pin();  // ClosedError once closed
    next = queue->pop(slice);
    return next.has_value();
  });
  if (!next) return std::nullopt;
  return make_kept(std::move(*next));
}

}  // namespace

void bind_timeslices(py::module_& m) {
  py::enum_<scheduler::Mode>(m, "SchedulerMode", "How inputs send: best-effort under credits, or paced by DFS.")
      .value("best_effort", scheduler::Mode::best_effort)
      .value("dfs", scheduler::Mode::dfs);
  py::enum_<scheduler::Assignment>(m, "Assignment",
                                   "Which compute node builds a time-slice: t mod M (fixed), or by load (the DDE "
                                   "shares each interval out by what the inputs report). Every node of a system "
                                   "must use the same.")
      .value("fixed", scheduler::Assignment::fixed)
      .value("load", scheduler::Assignment::load);

  py::class_<PyTimeslice>(m, "Timeslice",
                          "A time-slice: index, complete, and contributions, one memoryview per input (empty for an "
                          "input that did not contribute). Given to a handler: valid during the call. From recv(): "
                          "valid until release() (or the end of a `with` block), which gives the credits back.")
      .def_readonly("index", &PyTimeslice::index)
      .def_readonly("complete", &PyTimeslice::complete)
      .def_readonly("attempt", &PyTimeslice::attempt,
                    "The delivery number: 0 on the time-slice's own compute node, 1 and up when it was sent "
                    "again after a compute node was lost. Seen twice: keep the higher attempt (the index is the key).")
      .def_readonly("contributed", &PyTimeslice::contributed)
      .def_readonly("first_arrival", &PyTimeslice::first_arrival, "When its first contribution came (seconds).")
      .def_readonly("last_arrival", &PyTimeslice::last_arrival, "When its last contribution came (seconds).")
      .def_property_readonly("contributions", &PyTimeslice::contributions)
      .def("release", &PyTimeslice::release,
           "Frees the contributions and gives the credits back; BufferError while memoryviews of them are alive.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyTimeslice& t, const py::args&) { t.release(); });

  py::class_<PyTimesliceReceiver> receiver(
      m, "TimesliceReceiver",
      "A compute node of the scheduled push: builds complete time-slices from every input's contribution. With a "
      "handler, handler(timeslice) runs on the loop thread per time-slice; without, take them with recv() or a for "
      "loop (kept until released).");
  receiver
      .def(py::init([](py::object context, const Endpoint& local, const py::object& handler, std::uint32_t input_count,
                       std::uint32_t compute_count, std::uint32_t compute,
                       std::optional<std::uint64_t> timeslices_per_interval,
                       std::optional<std::uint32_t> credits_per_input, std::uint64_t max_contribution_bytes,
                       nanoseconds incomplete_timeout, const py::object& on_incomplete, bool run_dde,
                       scheduler::Assignment assignment, bool standby) {
             sp::TimesliceReceiverOptions options;
             options.standby = standby;
             options.config = config_of(input_count, compute_count, timeslices_per_interval, assignment);
             options.compute = compute;
             options.credits_per_input = credits_per_input;
             options.max_contribution_bytes = max_contribution_bytes;
             options.incomplete_timeout = incomplete_timeout;
             options.run_dde = run_dde;
             if (auto incomplete = share_callable(on_incomplete))
               options.on_incomplete = view_handler(incomplete, "netio.TimesliceReceiver on_incomplete");
             const std::string what = "the time-slice receiver at " + local.to_string();
             if (auto callable = share_callable(handler))
               return std::make_unique<PyTimesliceReceiver>(nullptr, std::move(context), what, local,
                                                            view_handler(callable, "netio.TimesliceReceiver handler"),
                                                            std::move(options));
             auto queue = std::make_shared<TimesliceQueue>();
             sp::TimesliceReceiver::KeepingHandler keep = [queue](sp::Timeslice timeslice) {
               {
                 std::lock_guard lock(queue->mutex);
                 queue->items.push_back(std::move(timeslice));
               }
               queue->ready.notify_one();
             };
             return std::make_unique<PyTimesliceReceiver>(queue, std::move(context), what, local, std::move(keep),
                                                          std::move(options));
           }),
           py::arg("context"), py::arg("local"), py::arg("handler") = py::none(), py::kw_only(), py::arg("input_count"),
           py::arg("compute_count"), py::arg("compute") = 0, py::arg("timeslices_per_interval") = py::none(),
           py::arg("credits_per_input") = py::none(), py::arg("max_contribution_bytes") = 64 * 1024,
           py::arg("incomplete_timeout") = nanoseconds(std::chrono::seconds(5)), py::arg("on_incomplete") = py::none(),
           py::arg("run_dde") = false, py::arg("assignment") = scheduler::Assignment::fixed, py::arg("standby") = false)
      .def(
          "drain", [](PyTimesliceReceiver& r) { return r.unlocked([](auto& socket) { return socket.drain(); }); },
          "This compute node drains: it names the boundary T (returned) from which the inputs send it nothing, builds "
          "everything below T, then wait_drained() is True and it may close; the inputs see a departure, not a loss. "
          "Fixed assignment only.")
      .def(
          "join", [](PyTimesliceReceiver& r) { r.unlocked([](auto& socket) { socket.join(); }); },
          "A standby slot (made with standby=True) joins: from a boundary the members name, its time-slices come "
          "here (stats().join_from once known).")
      .def(
          "wait_drained",
          [](PyTimesliceReceiver& r, Timeout timeout) {
            return wait_in_slices(timeout, [&](nanoseconds slice) { return r.pin()->wait_drained(slice); });
          },
          py::arg("timeout") = py::none(), "After drain(): True once drained, False on timeout.")
      .def(
          "recv",
          [](PyTimesliceReceiver& r, Timeout timeout) {
            auto next = next_kept(r, timeout);
            if (!next)
              throw_timeout(fmt::format("no complete time-slice within {} on {}", timeout_text(timeout), r.what()));
            return std::move(*next);
          },
          py::arg("timeout") = py::none(),
          "The next complete time-slice (made without a handler), waiting up to timeout; netio.TimeoutError.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__",
           [](PyTimesliceReceiver& r) { return next_or_stop([&] { return std::move(*next_kept(r, std::nullopt)); }); })
      .def_property_readonly("local_endpoint", [](PyTimesliceReceiver& r) { return r.pin()->local_endpoint(); })
      .def_property_readonly("dde_endpoint", [](PyTimesliceReceiver& r) { return r.pin()->dde_endpoint(); })
      .def_property_readonly("credits_per_input", [](PyTimesliceReceiver& r) { return r.pin()->credits_per_input(); })
      .def("stats", [](PyTimesliceReceiver& r) {
        const auto s = r.pin()->stats();
        py::dict fields;
        fields["complete"] = s.complete;
        fields["incomplete"] = s.incomplete;
        fields["contributions"] = s.contributions;
        fields["held_bytes"] = s.held_bytes;
        fields["kept"] = s.kept;
        fields["peak_held_bytes"] = s.peak_held_bytes;
        fields["dropped"] = s.dropped;
        fields["kept_stalls"] = s.kept_stalls;
        fields["reassigned_built"] = s.reassigned_built;
        fields["built_elsewhere"] = s.built_elsewhere;
        fields["computes_lost_heard"] = s.computes_lost_heard;
        fields["inputs_connected"] = s.inputs_connected;
        fields["inputs_gone"] = s.inputs_gone;
        fields["drain_from"] = s.drain_from;
        fields["drained"] = s.drained;
        fields["membership_notices"] = s.membership_notices;
        fields["join_from"] = s.join_from;
        return attribute_bag(fields);
      });
  def_close(receiver);

  py::class_<Sender> sender_class(m, "TimesliceSender",
                                  "An input node of the scheduled push: push(t, data) for t = 0, 1, 2, ...; each "
                                  "contribution goes to compute node t mod compute_count under its credits.");
  sender_class
      .def(py::init([](py::object context, std::uint32_t input, std::uint32_t input_count, std::uint32_t compute_count,
                       const std::vector<Endpoint>& compute_endpoints, scheduler::Mode mode,
                       const std::vector<Endpoint>& dde_endpoints, std::optional<std::uint64_t> timeslices_per_interval,
                       std::uint64_t max_contribution_bytes, std::size_t queue_capacity, nanoseconds push_timeout,
                       nanoseconds welcome_timeout, nanoseconds progress_timeout, scheduler::Assignment assignment,
                       const std::vector<scheduler::ComputeIndex>& standby_computes) {
             sp::TimesliceSenderOptions options;
             options.standby_computes = standby_computes;
             options.config = config_of(input_count, compute_count, timeslices_per_interval, assignment);
             options.mode = mode;
             options.input = input;
             options.compute_endpoints = compute_endpoints;
             options.dde_endpoints = dde_endpoints;
             options.max_contribution_bytes = max_contribution_bytes;
             options.queue_capacity = queue_capacity;
             options.push_timeout = push_timeout;
             options.welcome_timeout = welcome_timeout;
             options.progress_timeout = progress_timeout;
             return std::make_unique<Sender>(
                 std::move(context), fmt::format("the time-slice sender of input {}", input), std::move(options));
           }),
           py::arg("context"), py::kw_only(), py::arg("input"), py::arg("input_count"), py::arg("compute_count"),
           py::arg("compute_endpoints"), py::arg("mode") = scheduler::Mode::best_effort,
           py::arg("dde_endpoints") = std::vector<Endpoint>{}, py::arg("timeslices_per_interval") = py::none(),
           py::arg("max_contribution_bytes") = 64 * 1024, py::arg("queue_capacity") = 0,
           py::arg("push_timeout") = nanoseconds(std::chrono::seconds(10)),
           py::arg("welcome_timeout") = nanoseconds(std::chrono::seconds(10)),
           py::arg("progress_timeout") = nanoseconds(std::chrono::seconds(5)),
           py::arg("assignment") = scheduler::Assignment::fixed,
           py::arg("standby_computes") = std::vector<scheduler::ComputeIndex>{})
      .def(
          "push",
          [](Sender& s, scheduler::TimesliceIndex t, const py::object& data) {
            InputBytes bytes(data);
            s.unlocked([&](auto& sender) { sender.push(t, bytes.span()); });
          },
          py::arg("t"), py::arg("data"),
          "Queues this input's contribution to time-slice t (copied; t = 0, 1, 2, ... in order), waiting up to "
          "push_timeout for room.")
      .def(
          "try_push",
          [](Sender& s, scheduler::TimesliceIndex t, const py::object& data) {
            InputBytes bytes(data);
            return s.unlocked([&](auto& sender) { return sender.try_push(t, bytes.span()); });
          },
          py::arg("t"), py::arg("data"), "push() without waiting: False when the queue is full.")
      .def(
          "finish", [](Sender& s) { s.unlocked([](auto& sender) { sender.finish(); }); }, "No more pushes.")
      .def(
          "wait_finished",
          [](Sender& s, Timeout timeout) {
            return wait_in_slices(timeout, [&](nanoseconds slice) { return s.pin()->wait_finished(slice); });
          },
          py::arg("timeout") = py::none(),
          "After finish(): waits until everything pushed was sent and credited: True, or False on timeout.")
      .def("stats", [](Sender& s) {
        const auto st = s.pin()->stats();
        py::dict fields;
        fields["pushed"] = st.pushed;
        fields["sent"] = st.sent;
        fields["undeliverable"] = st.undeliverable;
        fields["unbuilt"] = st.unbuilt;
        fields["reassigned"] = st.reassigned;
        fields["retained"] = st.retained;
        fields["peak_retained"] = st.peak_retained;
        fields["credits_returned"] = st.credits_returned;
        fields["incomplete_credits"] = st.incomplete_credits;
        fields["reports_sent"] = st.reports_sent;
        fields["reports_missed"] = st.reports_missed;
        fields["proposals_taken"] = st.proposals_taken;
        fields["computes_lost"] = st.computes_lost;
        fields["ddes_lost"] = st.ddes_lost;
        fields["lost_computes"] = st.lost_computes;
        fields["lost_ddes"] = st.lost_ddes;
        fields["assignments_taken"] = st.assignments_taken;
        fields["assignment_waits"] = st.assignment_waits;
        fields["assignment_wait_s"] = seconds(nanoseconds(st.assignment_wait_ns));
        fields["computes_draining"] = st.computes_draining;
        fields["computes_drained"] = st.computes_drained;
        fields["computes_joined"] = st.computes_joined;
        fields["pushes_blocked"] = st.pushes_blocked;
        fields["push_blocked_s"] = seconds(nanoseconds(st.push_blocked_ns));
        fields["push_timeouts"] = st.push_timeouts;
        return attribute_bag(fields);
      });
  def_close(sender_class);
}

}  // namespace netio::python
