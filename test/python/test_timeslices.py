# SPDX-License-Identifier: MIT
"""The scheduled push from Python: TimesliceSender inputs, a TimesliceReceiver with a handler
and one whose time-slices are taken with recv() and a for loop (kept until released)."""
import time

import pytest

import netio
from conftest import LOOPBACK


def contribution(t, i):
    return b"t%d-i%d" % (t, i)


def run_inputs(ctx, endpoints, timeslices, inputs=2):
    senders = [netio.TimesliceSender(ctx, input=i, input_count=inputs, compute_count=len(endpoints),
                                     compute_endpoints=endpoints, timeslices_per_interval=len(endpoints) * 10)
               for i in range(inputs)]
    for t in range(timeslices):
        for i, sender in enumerate(senders):
            sender.push(t, contribution(t, i))
    for sender in senders:
        sender.finish()
    return senders


def test_receiver_with_handler(ctx):
    seen = []

    def handler(timeslice):
        seen.append((timeslice.index, timeslice.complete, [bytes(c) for c in timeslice.contributions]))

    with netio.TimesliceReceiver(ctx, LOOPBACK, handler, input_count=2, compute_count=1,
                                 timeslices_per_interval=10) as receiver:
        senders = run_inputs(ctx, [receiver.local_endpoint], 6)
        for sender in senders:
            assert sender.wait_finished(10)
            assert sender.stats().sent == 6
            sender.close()
        assert receiver.stats().complete == 6
    assert seen == [(t, True, [contribution(t, 0), contribution(t, 1)]) for t in range(6)]


def test_receiver_recv_and_iteration_keep_until_release(ctx):
    receivers = [netio.TimesliceReceiver(ctx, LOOPBACK, input_count=2, compute_count=2, compute=c,
                                         timeslices_per_interval=20, credits_per_input=2) for c in range(2)]
    senders = run_inputs(ctx, [r.local_endpoint for r in receivers], 4)
    kept = receivers[0].recv(timeout=10)
    assert kept.index == 0 and kept.complete and kept.contributed == [True, True]
    views = kept.contributions
    assert [bytes(v) for v in views] == [contribution(0, 0), contribution(0, 1)]
    with pytest.raises(BufferError):
        kept.release()
    for view in views:
        view.release()
    kept.release()
    with pytest.raises(netio.ClosedError):
        kept.contributions
    indices = [1, 3]
    for timeslice in receivers[1]:
        with timeslice:
            assert timeslice.index == indices.pop(0)
            assert bytes(timeslice.contributions[1]) == contribution(timeslice.index, 1)
        if not indices:
            break
    with receivers[0].recv(timeout=10) as timeslice:
        assert timeslice.index == 2
    for sender in senders:
        assert sender.wait_finished(10)
        sender.close()
    for receiver in receivers:
        receiver.close()


def test_receiver_closed_in_its_own_handler(ctx):
    holder = {}
    seen = []

    def handler(timeslice):
        seen.append(timeslice.index)
        holder["receiver"].close()

    holder["receiver"] = netio.TimesliceReceiver(ctx, LOOPBACK, handler, input_count=1, compute_count=1,
                                                 timeslices_per_interval=10)
    senders = run_inputs(ctx, [holder["receiver"].local_endpoint], 3, inputs=1)
    deadline = time.monotonic() + 5
    while not holder["receiver"].closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert holder["receiver"].closed and seen == [0]
    for sender in senders:
        sender.close()


def test_a_lost_compute_node_s_timeslices_come_from_the_others_with_their_attempt(ctx):
    seen = []

    def handler(timeslice):
        seen.append((timeslice.index, timeslice.attempt, timeslice.complete))

    kept = netio.TimesliceReceiver(ctx, LOOPBACK, handler, input_count=2, compute_count=2, compute=0,
                                   timeslices_per_interval=20, assignment=netio.Assignment.fixed)
    lost = netio.TimesliceReceiver(ctx, LOOPBACK, input_count=2, compute_count=2, compute=1,
                                   timeslices_per_interval=20)
    endpoints = [kept.local_endpoint, lost.local_endpoint]
    senders = [netio.TimesliceSender(ctx, input=i, input_count=2, compute_count=2, compute_endpoints=endpoints,
                                     timeslices_per_interval=20, progress_timeout=2.0,
                                     assignment=netio.Assignment.fixed) for i in range(2)]
    for t in range(2):
        for i, sender in enumerate(senders):
            sender.push(t, contribution(t, i))
    with lost.recv(timeout=10) as timeslice:
        assert timeslice.index == 1 and timeslice.attempt == 0
    deadline = time.monotonic() + 10  # both credits back at both inputs: t = 1 is known built
    while any(s.stats().credits_returned < 2 for s in senders) and time.monotonic() < deadline:
        time.sleep(0.01)
    lost.close()  # compute node 1 goes: its time-slices from here on are built by node 0
    for t in range(2, 8):
        for i, sender in enumerate(senders):
            sender.push(t, contribution(t, i))
    for sender in senders:
        sender.finish()
        assert sender.wait_finished(10)
        stats = sender.stats()
        assert stats.lost_computes == [1] and stats.computes_lost == 1
        assert stats.reassigned >= 3 and stats.undeliverable == 0
        sender.close()
    # Node 0 built its own (attempt 0) and node 1's after it went (attempt 1); t = 1 was built
    # and credited on node 1 before it went, so it is not built again.
    assert sorted(seen) == [(t, t % 2, True) for t in range(8) if t != 1]
    assert kept.stats().reassigned_built == 3
    kept.close()


def test_a_drained_compute_node_leaves_with_nothing_lost_or_reassigned(ctx):
    seen = {0: [], 1: []}

    def handler_of(node):
        return lambda timeslice: seen[node].append((timeslice.index, timeslice.attempt, timeslice.complete))

    receivers = [netio.TimesliceReceiver(ctx, LOOPBACK, handler_of(c), input_count=2, compute_count=2, compute=c,
                                         timeslices_per_interval=20) for c in range(2)]
    endpoints = [r.local_endpoint for r in receivers]
    senders = [netio.TimesliceSender(ctx, input=i, input_count=2, compute_count=2, compute_endpoints=endpoints,
                                     timeslices_per_interval=20) for i in range(2)]
    boundary = receivers[1].drain()
    assert boundary % 20 == 0 and receivers[1].drain() == boundary  # an interval start; idempotent
    count = boundary + 40
    for t in range(count):
        for i, sender in enumerate(senders):
            sender.push(t, contribution(t, i))
    assert receivers[1].wait_drained(10)
    assert receivers[1].stats().drained and receivers[1].stats().drain_from == boundary
    receivers[1].close()  # it leaves: a departure, not a loss
    for sender in senders:
        sender.finish()
        assert sender.wait_finished(10)
        deadline = time.monotonic() + 10
        while sender.stats().computes_drained < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        stats = sender.stats()
        assert stats.computes_draining == 1 and stats.computes_drained == 1
        assert stats.computes_lost == 0 and stats.reassigned == 0 and stats.undeliverable == 0
        sender.close()
    # Node 1 built its own below the boundary; from it on node 0 built them all, attempt 0.
    assert sorted(seen[1]) == [(t, 0, True) for t in range(1, boundary, 2)]
    assert sorted(seen[0]) == [(t, 0, True) for t in range(count) if t % 2 == 0 or t >= boundary]
    receivers[0].close()
