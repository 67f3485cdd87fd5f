#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A monitor: subscribes to tags on a netio publisher and prints each tag's rate every second.

    monitor.py tcp://HOST:PORT --tags 0x101,0x102 [--seconds N] [--mode ht|ll]

High-throughput subscriptions (the default) are taken in batches (recv_batch); low-latency ones
are counted in a handler on the loop thread. Ctrl-C stops it; it prints the totals at the end.
"""
import argparse
import collections
import threading
import time

import netio


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("publisher", help="the publisher's endpoint, e.g. tcp://127.0.0.1:6000")
    parser.add_argument("--tags", required=True, help="comma-separated tags (0x... or decimal)")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long (default: Ctrl-C)")
    parser.add_argument("--mode", choices=("ht", "ll"), default="ht")
    args = parser.parse_args()
    tags = [int(tag, 0) for tag in args.tags.split(",")]

    counts = collections.Counter()  # tag -> messages in this second
    sizes = collections.Counter()
    lock = threading.Lock()

    def on_message(tag, data, publisher):  # low-latency: the loop thread
        with lock:
            counts[tag] += 1
            sizes[tag] += len(data)

    totals = collections.Counter()
    with netio.Context() as ctx:
        low_latency = args.mode == "ll"
        subscriber = netio.SubscribeSocket(ctx, on_message if low_latency else None, name="monitor")
        mode = netio.Mode.low_latency if low_latency else netio.Mode.high_throughput
        subscriber.subscribe(args.publisher, tags, mode=mode)
        start = last = time.monotonic()
        try:
            while args.seconds is None or time.monotonic() - start < args.seconds:
                if low_latency:
                    time.sleep(0.1)
                else:
                    for tag, data in subscriber.recv_batch(4096, timeout=0.1):
                        counts[tag] += 1
                        sizes[tag] += len(data)
                now = time.monotonic()
                if now - last >= 1.0:
                    with lock:
                        for tag in tags:
                            rate = counts[tag] / (now - last)
                            mbps = 8 * sizes[tag] / (now - last) / 1e6
                            print(f"tag {tag:#x}: {rate:.0f} msg/s, {mbps:.2f} Mb/s", flush=True)
                        totals.update(counts)
                        counts.clear()
                        sizes.clear()
                    last = now
        except KeyboardInterrupt:
            pass
        totals.update(counts)
        subscriber.close()
    print("total:", ", ".join(f"tag {tag:#x} {totals[tag]}" for tag in tags))


if __name__ == "__main__":
    main()
