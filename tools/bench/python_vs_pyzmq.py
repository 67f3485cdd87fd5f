#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python receivers of netio against pyzmq's (docs/performance.md, "Python").

    flock /tmp/netio-bench.lock tools/bench/python_vs_pyzmq.py --build build/release [--runs 5] [-t 2] [-s 64]

Four receivers in Python, each fed by a C++ sender at full speed over loopback TCP, in
interleaved rounds (--runs of each): netio's HighThroughputReceiveSocket with recv_batch()
against pyzmq's PULL socket (fed by netio_throughput and zmq_throughput), and netio's
SubscribeSocket with recv_batch() against pyzmq's SUB (fed by netio_throughput --publish and
zmq_pubsub --publish). Every receiver turns each message into a Python bytes object. Rate:
messages from the first to the last one received, over that time. Prints each run, then one
line per comparison: medians, spreads (min-max) and the ratio of the medians. Needs the
Debian package python3-zmq and the build's tools (netio_throughput, zmq_throughput,
zmq_pubsub) and Python module (BUILD/python).
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


def wait_for_port(path, process):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text().split()[0])
        if process.poll() is not None:
            raise SystemExit(f"{process.args[0]} exited with {process.returncode}")
        time.sleep(0.005)
    raise SystemExit(f"{process.args[0]}: no port")


class Counter:
    """Counts messages from the first to the last, touching each (len)."""

    def __init__(self):
        self.count = 0
        self.first = None
        self.last = None

    def add(self, messages):
        now = time.perf_counter()
        if self.first is None:
            self.first = now
            return  # the first batch opens the window
        for message in messages:
            self.count += len(message) > 0
        self.last = now

    def rate(self):
        return self.count / (self.last - self.first) if self.last else 0.0


def netio_pull(tools, size, seconds):
    import netio
    counter = Counter()
    with netio.Context() as ctx, netio.HighThroughputReceiveSocket(ctx, "tcp://127.0.0.1:0") as receiver:
        sender = subprocess.Popen([tools / "netio_throughput", "-e", str(receiver.local_endpoint), "-s", str(size),
                                   "-t", f"{seconds}s"], stdout=subprocess.DEVNULL)
        while sender.poll() is None or counter.first is None:
            batch = receiver.recv_batch(4096, timeout=0.5)
            if batch:
                counter.add(batch)
            elif sender.poll() is not None:
                break
        while batch := receiver.recv_batch(4096, timeout=0.2):
            counter.add(batch)
        sender.wait()
    return counter.rate()


def zmq_receive(context, socket, sender):
    """Counts what a pyzmq socket receives until the sender's empty end marker (or its exit),
    then closes the socket and waits for the sender (which ends once its receiver has gone)."""
    import zmq
    counter = Counter()
    try:
        while True:
            try:
                message = socket.recv()
            except zmq.Again:
                if sender.poll() is not None:
                    break
                continue
            if not message:  # the sender's end marker
                break
            counter.add((message,))
    finally:
        socket.close(linger=0)
        context.term()
        sender.wait()
    return counter


def zmq_pull(tools, size, seconds):
    import zmq
    context = zmq.Context()
    pull = context.socket(zmq.PULL)
    pull.setsockopt(zmq.RCVTIMEO, 500)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    sender = subprocess.Popen([tools / "bench" / "zmq_throughput", "-e", f"tcp://127.0.0.1:{port}", "-s", str(size),
                               "-t", f"{seconds}s"], stdout=subprocess.DEVNULL)
    return zmq_receive(context, pull, sender).rate()


def netio_sub(tools, size, seconds):
    import netio
    counter = Counter()
    with tempfile.TemporaryDirectory() as scratch, netio.Context() as ctx:
        port_file = pathlib.Path(scratch) / "port"
        publisher = subprocess.Popen([tools / "netio_throughput", "--publish", "-e", "tcp://127.0.0.1:0", "--tags", "1",
                                      "--port-file", str(port_file), "-s", str(size), "-t", f"{seconds}s"],
                                     stdout=subprocess.DEVNULL)
        port = wait_for_port(port_file, publisher)
        with netio.SubscribeSocket(ctx) as subscriber:
            subscriber.subscribe(f"tcp://127.0.0.1:{port}", 1)
            while True:
                batch = subscriber.recv_batch(4096, timeout=0.5)
                if batch:
                    counter.add([data for _, data in batch])
                elif publisher.poll() is not None:
                    break
        publisher.wait()
    return counter.rate()


def zmq_sub(tools, size, seconds):
    import zmq
    with tempfile.TemporaryDirectory() as scratch:
        port_file = pathlib.Path(scratch) / "port"
        publisher = subprocess.Popen([tools / "bench" / "zmq_pubsub", "--publish", "--port-file", str(port_file),
                                      "-s", str(size), "-t", f"{seconds}s"], stdout=subprocess.DEVNULL)
        port = wait_for_port(port_file, publisher)
        context = zmq.Context()
        sub = context.socket(zmq.SUB)
        sub.setsockopt(zmq.RCVTIMEO, 500)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(f"tcp://127.0.0.1:{port}")
        return zmq_receive(context, sub, publisher).rate()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, type=pathlib.Path, help="the build directory (its tools/ and python/)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("-t", "--seconds", type=float, default=2.0)
    parser.add_argument("-s", "--size", type=int, default=64)
    args = parser.parse_args()
    sys.path.insert(0, str(args.build / "python"))
    tools = args.build / "tools"
    benches = {"netio HT recv_batch": netio_pull, "pyzmq PULL": zmq_pull,
               "netio SUB recv_batch": netio_sub, "pyzmq SUB": zmq_sub}
    rates = {name: [] for name in benches}
    for run in range(args.runs):
        for name, bench in benches.items():
            rate = bench(tools, args.size, args.seconds)
            rates[name].append(rate)
            print(f"run {run + 1}: {name}: {rate / 1e6:.3f} M msg/s", flush=True)
    for ours, theirs in (("netio HT recv_batch", "pyzmq PULL"), ("netio SUB recv_batch", "pyzmq SUB")):
        a, b = statistics.median(rates[ours]), statistics.median(rates[theirs])
        print(f"{ours}: {a / 1e6:.3f} M msg/s ({min(rates[ours]) / 1e6:.3f}-{max(rates[ours]) / 1e6:.3f}); "
              f"{theirs}: {b / 1e6:.3f} M msg/s ({min(rates[theirs]) / 1e6:.3f}-{max(rates[theirs]) / 1e6:.3f}); "
              f"ratio {a / b:.2f}x ({args.size} B, {args.runs} runs)")


if __name__ == "__main__":
    main()
