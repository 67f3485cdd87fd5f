# SPDX-License-Identifier: MIT
"""The point-to-point sockets: handlers, replies, recv/recv_batch/iteration, memoryview lifetime,
the buffer protocol on send, the GIL released while waiting, Ctrl-C while blocked, no leak."""
import os
import signal
import threading
import time

import numpy
import pytest

import netio
from conftest import LOOPBACK


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_low_latency_handler_identity_and_reply(ctx):
    got = []

    def handler(data, peer):
        got.append((bytes(data), peer.name, threading.current_thread() is threading.main_thread()))
        assert peer.try_reply(b"ack:" + bytes(data))

    with netio.LowLatencyReceiveSocket(ctx, LOOPBACK, handler) as receiver:
        with netio.LowLatencySendSocket(ctx, receiver.local_endpoint, name="sender-1") as sender:
            assert sender.wait_connected(5)
            assert sender.connected
            for i in range(3):
                sender.send(f"hello {i}".encode())
            replies = [bytes(sender.recv_reply(timeout=5)) for _ in range(3)]
            assert sender.wait_sent(5)
            assert sender.stats().messages == 3
        wait_until(lambda: len(got) == 3)
        assert [g[0] for g in got] == [b"hello 0", b"hello 1", b"hello 2"]
        assert all(name == "sender-1" and not on_main for _, name, on_main in got)
        assert replies == [b"ack:hello 0", b"ack:hello 1", b"ack:hello 2"]
        assert receiver.stats().messages == 3


def test_handler_view_is_released_after_the_call(ctx):
    kept = []
    with netio.LowLatencyReceiveSocket(ctx, LOOPBACK, lambda data, peer: kept.append(data)) as receiver:
        with netio.LowLatencySendSocket(ctx, receiver.local_endpoint) as sender:
            sender.send(b"short-lived")
        wait_until(lambda: kept)
    with pytest.raises(ValueError, match="released"):
        bytes(kept[0])


def test_handler_exception_is_reported_and_the_loop_goes_on(ctx):
    got = []
    reported = []
    old_hook = __import__("sys").unraisablehook
    __import__("sys").unraisablehook = lambda unraisable: reported.append(unraisable.exc_value)

    def handler(data, peer):
        got.append(bytes(data))
        if data == b"bad":
            raise RuntimeError("boom")

    try:
        with netio.LowLatencyReceiveSocket(ctx, LOOPBACK, handler) as receiver:
            with netio.LowLatencySendSocket(ctx, receiver.local_endpoint) as sender:
                sender.send(b"bad")
                sender.send(b"good")
            wait_until(lambda: len(got) == 2)
    finally:
        __import__("sys").unraisablehook = old_hook
    assert any(isinstance(e, RuntimeError) for e in reported)


def test_high_throughput_recv_batch_iteration_and_buffer_protocol(ctx):
    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK) as receiver:
        with netio.HighThroughputSendSocket(ctx, receiver.local_endpoint, name="ht") as sender:
            sender.send(b"bytes")
            sender.send(bytearray(b"bytearray"))
            sender.send(memoryview(b"xxmemoryviewxx")[2:-2])
            sender.send(numpy.arange(4, dtype=numpy.uint32))
            sender.send_parts([b"head:", b"tail"])
            sender.send_many([b"m%d" % i for i in range(1000)])
            assert sender.flush_and_wait(5)
            first = receiver.recv(timeout=5)
            assert bytes(first) == b"bytes" and first.peer.name == "ht" and len(first) == 5
            assert receiver.recv(timeout=5).tobytes() == b"bytearray"
            assert bytes(receiver.recv(timeout=5)) == b"memoryview"
            array = numpy.frombuffer(receiver.recv(timeout=5).data, dtype=numpy.uint32)
            assert list(array) == [0, 1, 2, 3]
            assert bytes(receiver.recv(timeout=5)) == b"head:tail"
            batch = []
            while len(batch) < 1000:
                batch += receiver.recv_batch(256, timeout=5)
            assert batch == [b"m%d" % i for i in range(1000)]
            sender.send(b"iterated")
            sender.flush()
            for message in receiver:
                assert bytes(message) == b"iterated"
                break


def test_large_message_zero_copy_send(ctx):
    payload = numpy.random.default_rng(1).integers(0, 255, 1 << 20, dtype=numpy.uint8)
    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK) as receiver:
        with netio.HighThroughputSendSocket(ctx, receiver.local_endpoint, zero_copy_threshold=4096) as sender:
            assert sender.wait_connected(5)
            sender.send(payload)
            assert sender.stats().zero_copy_messages == 1
            with receiver.recv(timeout=5) as message:
                view = message.data
                assert numpy.array_equal(numpy.frombuffer(view, dtype=numpy.uint8), payload)
                view.release()


def test_message_memoryview_valid_until_release(ctx):
    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK) as receiver:
        with netio.HighThroughputSendSocket(ctx, receiver.local_endpoint) as sender:
            sender.send(b"in the page")
            sender.flush()
            message = receiver.recv(timeout=5)
            view = message.data
            assert view.readonly and bytes(view) == b"in the page"
            with pytest.raises(BufferError, match="memoryview"):
                message.release()  # a view is alive: refused, the view stays valid
            assert bytes(view[3:6]) == b"the"
            view.release()
            message.release()
            assert message.released
            with pytest.raises(netio.ClosedError, match="released") as raised:
                message.data
            assert raised.value.errc == netio.Errc.closed
            with pytest.raises(netio.ClosedError):
                bytes(message)


def test_blocked_recv_releases_the_gil(ctx):
    progress = []  # when another thread ran
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            progress.append(time.monotonic())
            sum(range(1000))

    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK) as receiver:
        thread = threading.Thread(target=busy)
        thread.start()
        try:
            started = time.monotonic()
            with pytest.raises(netio.TimeoutError):
                receiver.recv(timeout=0.5)
            ended = time.monotonic()
        finally:
            stop.set()
            thread.join()
    # The other thread ran in the middle of the wait, not only before or after it.
    middle = [t for t in progress if started + 0.1 < t < ended - 0.1]
    assert len(middle) > 100, f"{len(middle)} steps of another thread while recv() waited"


def test_ctrl_c_interrupts_a_blocked_recv(ctx):
    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK) as receiver:
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            receiver.recv(timeout=3)  # would end in TimeoutError after 3 s if the signal waited
        assert time.monotonic() - started < 2
        timer.join()


def test_close_from_another_thread_ends_iteration(ctx):
    receiver = netio.HighThroughputReceiveSocket(ctx, LOOPBACK)
    threading.Timer(0.2, receiver.close).start()
    assert list(receiver) == []


def rss_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_leak_over_10000_sockets(ctx):
    with netio.LowLatencyReceiveSocket(ctx, LOOPBACK, lambda data, peer: None) as receiver:
        def churn(count):
            for i in range(count):
                if i % 2:
                    with netio.LowLatencySendSocket(ctx, receiver.local_endpoint) as sender:
                        sender.send(b"x")
                else:
                    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK):
                        pass
        churn(1000)  # allocators and caches warm
        before = rss_bytes()
        churn(10_000)
        grown = rss_bytes() - before
    assert grown < 8 << 20, f"RSS grew by {grown >> 10} KiB over 10,000 sockets"


def test_connection_events_and_failure(ctx):
    events = []
    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK, on_connected=lambda peer: events.append(("up", peer.name)),
                                           on_disconnected=lambda peer, why: events.append(("down", why.errc))) as r:
        with netio.HighThroughputSendSocket(ctx, r.local_endpoint, name="evented") as sender:
            assert sender.wait_connected(5)
            assert sender.failure is None
        wait_until(lambda: len(events) == 2)
    assert events[0] == ("up", "evented") and events[1][0] == "down" and isinstance(events[1][1], netio.Errc)
    refused = netio.LowLatencySendSocket(ctx, "tcp://127.0.0.1:1", connect_timeout=-1)
    with pytest.raises(netio.Error) as raised:
        refused.wait_connected(5)
    assert raised.value.errc == netio.Errc.connection_refused
    assert refused.failure.errc == netio.Errc.connection_refused
    refused.close()
