# SPDX-License-Identifier: MIT
"""Publish/subscribe from Python, both modes; a C++ publisher (netio_cat pub) with a Python
subscriber and a Python publisher with a C++ subscriber (netio_cat sub)."""
import os
import subprocess
import time

import pytest

import netio
from conftest import LOOPBACK

NETIO_CAT = os.environ.get("NETIO_CAT")
needs_netio_cat = pytest.mark.skipif(not (NETIO_CAT and os.path.exists(NETIO_CAT)), reason="netio_cat not built")


def test_high_throughput_subscription(ctx):
    with netio.PublishSocket(ctx, LOOPBACK, name="pub") as publisher, netio.SubscribeSocket(ctx) as subscriber:
        subscriber.subscribe(publisher.local_endpoint, [1, 2])
        assert publisher.wait_for_subscribers(1, timeout=5)
        publisher.publish(1, b"one")
        publisher.publish(3, b"nobody")
        publisher.publish_many(2, [b"two", bytearray(b"deux")])
        publisher.flush()
        with subscriber.recv(timeout=5) as first:
            assert (first.tag, bytes(first), first.publisher.name) == (1, b"one", "pub")
        assert subscriber.recv_batch(10, timeout=5) + subscriber.recv_batch(10, timeout=0.2) == [
            (2, b"two"), (2, b"deux")]
        stats = publisher.stats()
        assert stats.unrouted == 1 and stats.subscribers == 1
        subscriber.unsubscribe(publisher.local_endpoint, 1)
        publisher.publish(1, b"gone")
        publisher.publish(2, b"still")
        publisher.flush()
        assert bytes(subscriber.recv(timeout=5)) == b"still"
        assert subscriber.stats().received == 4


def test_low_latency_subscription_handler(ctx):
    got = []
    subscriber = netio.SubscribeSocket(ctx, lambda tag, data, publisher: got.append((tag, bytes(data))))
    with netio.PublishSocket(ctx, LOOPBACK) as publisher, subscriber:
        subscriber.subscribe(publisher.local_endpoint, 7, mode=netio.Mode.low_latency)
        for i in range(5):
            publisher.publish(7, b"%d" % i)
        deadline = time.monotonic() + 5
        while len(got) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert got == [(7, b"%d" % i) for i in range(5)]


def test_subscribing_to_nobody_times_out(ctx):
    with netio.SubscribeSocket(ctx, connect_timeout=0.3) as subscriber:
        with pytest.raises(netio.Error) as raised:
            subscriber.subscribe("tcp://127.0.0.1:1", 1)
        assert raised.value.errc in (netio.Errc.timeout, netio.Errc.connection_refused)


@needs_netio_cat
def test_cpp_publisher_python_subscriber(ctx, tmp_path):
    port_file = tmp_path / "port"
    publisher = subprocess.Popen([NETIO_CAT, "pub", "-e", LOOPBACK, "--tag", "5", "--port-file", str(port_file)],
                                 stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not (port_file.exists() and port_file.read_text().strip()):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        port = int(port_file.read_text().split()[0])
        with netio.SubscribeSocket(ctx) as subscriber:
            subscriber.subscribe(f"tcp://127.0.0.1:{port}", 5)
            publisher.communicate(b"first line\nsecond line\n", timeout=10)
            got = [bytes(subscriber.recv(timeout=5)) for _ in range(2)]
        assert got == [b"first line\n", b"second line\n"]
        assert publisher.returncode == 0
    finally:
        publisher.kill()


@needs_netio_cat
def test_python_publisher_cpp_subscriber(ctx):
    with netio.PublishSocket(ctx, LOOPBACK) as publisher:
        subscriber = subprocess.Popen([NETIO_CAT, "sub", "-e", str(publisher.local_endpoint), "--tags", "9",
                                       "--format", "raw", "-n", "3", "--timeout", "10s"], stdout=subprocess.PIPE)
        try:
            assert publisher.wait_for_subscribers(1, timeout=10)
            for word in (b"alpha ", b"beta ", b"gamma"):
                publisher.publish(9, word)
            publisher.flush()
            out, _ = subscriber.communicate(timeout=10)
        finally:
            subscriber.kill()
    assert out == b"alpha beta gamma"
    assert subscriber.returncode == 0


def test_subscriber_closed_in_its_own_handler(ctx):
    got = []
    holder = {}

    def on_message(tag, data, publisher):
        got.append(bytes(data))
        holder["subscriber"].close()  # on the loop thread, inside this socket's own handler

    with netio.PublishSocket(ctx, LOOPBACK) as publisher:
        holder["subscriber"] = netio.SubscribeSocket(ctx, on_message)
        holder["subscriber"].subscribe(publisher.local_endpoint, 1, mode=netio.Mode.low_latency)
        publisher.publish(1, b"last")
        deadline = time.monotonic() + 5
        while not holder["subscriber"].closed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert holder["subscriber"].closed and got == [b"last"]
        with pytest.raises(netio.ClosedError):
            holder["subscriber"].recv(timeout=0)
