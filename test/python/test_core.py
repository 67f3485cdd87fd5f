# SPDX-License-Identifier: MIT
"""Endpoint, Context, errors: netio.Error with the right errc for bad arguments."""
import datetime

import pytest

import netio
from conftest import LOOPBACK


def test_endpoint_parses_and_prints():
    e = netio.Endpoint("tcp://127.0.0.1:5000")
    assert (e.scheme, e.host, e.port) == ("tcp", "127.0.0.1", 5000)
    assert str(e) == "tcp://127.0.0.1:5000"
    assert e == netio.Endpoint.parse("tcp://127.0.0.1:5000")
    assert e.with_port(6000).port == 6000
    assert len({e, netio.Endpoint("tcp://127.0.0.1:5000")}) == 1


@pytest.mark.parametrize("text", ["bogus", "tcp://127.0.0.1", "tcp://127.0.0.1:99999", "nosuch://a:1"])
def test_malformed_endpoint_raises_error_with_errc(text):
    with pytest.raises(netio.Error) as raised:
        netio.Endpoint(text)
    assert raised.value.errc == netio.Errc.malformed_endpoint
    assert text.split("?")[0][:5] in str(raised.value)


def test_error_classes():
    assert issubclass(netio.TimeoutError, netio.Error)
    assert issubclass(netio.TimeoutError, TimeoutError)
    assert issubclass(netio.ClosedError, netio.Error)


def test_bad_arguments_raise_netio_errors(ctx):
    with pytest.raises(netio.Error) as raised:  # a handler that is not callable
        netio.LowLatencyReceiveSocket(ctx, LOOPBACK, 42)
    assert raised.value.errc == netio.Errc.invalid_option
    with netio.HighThroughputSendSocket(ctx, LOOPBACK.replace(":0", ":1"), connect_timeout=-1) as s:
        with pytest.raises(netio.Error) as raised:  # not bytes-like
            s.send(12)
        assert raised.value.errc == netio.Errc.invalid_option
    with pytest.raises(netio.Error) as raised:  # compute_count 0 does not validate
        netio.TimesliceReceiver(ctx, LOOPBACK, input_count=1, compute_count=0)
    assert raised.value.errc == netio.Errc.invalid_option
    with pytest.raises(TypeError):  # a string where a timeout goes
        netio.HighThroughputReceiveSocket(ctx, LOOPBACK).recv(timeout="soon")


def test_listening_twice_on_one_port_raises(ctx):
    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK) as first:
        with pytest.raises(netio.Error) as raised:
            netio.HighThroughputReceiveSocket(ctx, first.local_endpoint)
        assert raised.value.errc is not None


def test_timeouts_take_int_float_timedelta(ctx):
    with netio.HighThroughputReceiveSocket(ctx, LOOPBACK) as r:
        for timeout in (0, 0.01, datetime.timedelta(milliseconds=10)):
            with pytest.raises(netio.TimeoutError) as raised:
                r.recv(timeout=timeout)
            assert raised.value.errc == netio.Errc.timeout
        assert r.try_recv() is None
        assert r.recv_batch(16, timeout=0.01) == []


def test_closed_context_and_socket_raise_closed_error():
    context = netio.Context()
    r = netio.HighThroughputReceiveSocket(context, LOOPBACK)
    r.close()
    assert r.closed
    with pytest.raises(netio.ClosedError) as raised:
        r.recv(timeout=0)
    assert raised.value.errc == netio.Errc.closed
    context.close()
    with pytest.raises(netio.ClosedError):
        netio.HighThroughputReceiveSocket(context, LOOPBACK)
    assert context.closed


def test_context_options():
    with netio.Context(busy_poll=True) as context:
        with netio.HighThroughputReceiveSocket(context, LOOPBACK) as r:
            assert r.local_endpoint.port != 0
    with netio.Context(emulation="delay=1ms") as context:
        pass
    with pytest.raises(netio.Error) as raised:
        netio.Context(emulation="delay=nonsense")
    assert raised.value.errc == netio.Errc.invalid_option


def test_interpreter_exits_with_sockets_left_open():
    # Handlers still being called when the interpreter ends: the context is closed at exit
    # (atexit) before Python stops its threads, so the loop thread never waits for the GIL.
    script = """
import time
import netio
ctx = netio.Context()
receiver = netio.LowLatencyReceiveSocket(ctx, "tcp://127.0.0.1:0", lambda data, peer: time.sleep(0.001))
sender = netio.LowLatencySendSocket(ctx, receiver.local_endpoint)
for i in range(300):
    sender.send(b"x" * 100)
"""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
