#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A time-slice consumer: a compute node of netio's scheduled push, in Python.

    timeslice_consumer.py --listen tcp://0.0.0.0:7000 --inputs N --computes M [--compute C]
    timeslice_consumer.py --demo COUNT      # with COUNT time-slices from two inputs of its own

Takes each complete time-slice (one contribution per input, memoryviews over netio's buffers),
checks it, and releases it, which gives the inputs their credits back. Prints one line per
time-slice and a summary; Ctrl-C stops it.
"""
import argparse

import netio


def consume(receiver, count=None):
    built = 0
    total_bytes = 0
    for timeslice in receiver:  # waits without end; Ctrl-C raises KeyboardInterrupt
        with timeslice:  # kept until here: the inputs' credits come back at the end of the block
            sizes = [len(contribution) for contribution in timeslice.contributions]
            spread_us = 1e6 * (timeslice.last_arrival - timeslice.first_arrival)
            print(f"time-slice {timeslice.index}: {sum(sizes)} bytes from {len(sizes)} inputs, "
                  f"spread {spread_us:.0f} us{'' if timeslice.complete else ' (incomplete)'}")
            built += 1
            total_bytes += sum(sizes)
        if count is not None and built == count:
            break
    return built, total_bytes


def demo(ctx, count):
    """Two inputs of this process feed one compute node."""
    receiver = netio.TimesliceReceiver(ctx, "tcp://127.0.0.1:0", input_count=2, compute_count=1,
                                       timeslices_per_interval=100)
    inputs = [netio.TimesliceSender(ctx, input=i, input_count=2, compute_count=1,
                                    compute_endpoints=[receiver.local_endpoint], timeslices_per_interval=100,
                                    queue_capacity=count)
              for i in range(2)]
    for t in range(count):
        for i, sender in enumerate(inputs):
            sender.push(t, bytes([i]) * (1000 + t))
    result = consume(receiver, count)
    for sender in inputs:
        sender.finish()
        sender.wait_finished(5)
        sender.close()
    receiver.close()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="tcp://0.0.0.0:7000")
    parser.add_argument("--inputs", type=int, default=1)
    parser.add_argument("--computes", type=int, default=1)
    parser.add_argument("--compute", type=int, default=0)
    parser.add_argument("--timeslices-per-interval", type=int, default=None)
    parser.add_argument("--demo", type=int, metavar="COUNT", help="run two inputs here and build COUNT time-slices")
    args = parser.parse_args()
    with netio.Context() as ctx:
        try:
            if args.demo:
                built, total_bytes = demo(ctx, args.demo)
            else:
                receiver = netio.TimesliceReceiver(ctx, args.listen, input_count=args.inputs,
                                                   compute_count=args.computes, compute=args.compute,
                                                   timeslices_per_interval=args.timeslices_per_interval)
                print("listening on", receiver.local_endpoint, flush=True)
                built, total_bytes = consume(receiver)
        except KeyboardInterrupt:
            return
    print(f"{built} time-slices, {total_bytes} bytes")


if __name__ == "__main__":
    main()
