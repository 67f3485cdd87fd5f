#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cost of metrics on the data path (issue 52): high-throughput 64 B messages, msg/s as
netio_recv reports it, without --metrics against with --metrics on both tools and a scraper
fetching both /metrics every second. Runs alternate (off, on, off, on, ...); prints the
medians, the median of the per-pair ratios and their range. Take the benchmark lock:

  flock /tmp/netio-bench.lock tools/bench/metrics_cost.py build/release [--runs 5] [--seconds 3]
"""
import argparse
import json
import re
import statistics
import subprocess
import threading
import time
import urllib.request


def run_pair(bin_dir, seconds, metrics):
    extra = ["--metrics", "127.0.0.1:0"] if metrics else []
    recv = subprocess.Popen([f"{bin_dir}/netio_recv", "-e", "tcp://127.0.0.1:0", "--json", "--report-interval", "0",
                             "--cpu", "1", "--timeout", "60s"] + extra,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    urls, port = [], None
    while port is None:
        line = recv.stderr.readline()
        if not line:
            raise SystemExit("netio_recv ended before listening")
        if line.startswith("metrics: "):
            urls.append(line.split()[1])
        if m := re.search(r"listening on tcp://127\.0\.0\.1:(\d+)", line):
            port = m.group(1)
    send = subprocess.Popen([f"{bin_dir}/netio_throughput", "-e", f"tcp://127.0.0.1:{port}", "-s", "64", "-t",
                             f"{seconds}s", "--cpu", "0", "--timeout", "60s"] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()
    scrapes = [0]

    def scraper():  # every second, both tools
        if metrics:
            line = send.stderr.readline()
            if line.startswith("metrics: "):
                urls.append(line.split()[1])
        while not stop.wait(1.0):
            for url in urls:
                try:
                    urllib.request.urlopen(url, timeout=2).read()
                    scrapes[0] += 1
                except OSError:
                    pass

    thread = threading.Thread(target=scraper)
    thread.start()
    out, _ = recv.communicate(timeout=120)
    send.wait(60)
    stop.set()
    thread.join()
    result = json.loads(out)["results"][0]
    return result["msgs_per_s"], scrapes[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    bin_dir = f"{args.build}/tools"
    off, on, ratios, scrapes = [], [], [], []
    for i in range(args.runs):
        order = (False, True) if i % 2 == 0 else (True, False)
        pair = {}
        for metrics in order:
            rate, n = run_pair(bin_dir, args.seconds, metrics)
            pair[metrics] = rate
            if metrics:
                scrapes.append(n)
        off.append(pair[False])
        on.append(pair[True])
        ratios.append(pair[True] / pair[False])
        print(f"run {i + 1}: without {pair[False] / 1e6:.2f}M msg/s, with metrics scraped {pair[True] / 1e6:.2f}M "
              f"({ratios[-1]:.3f}; {scrapes[-1]} scrapes)", flush=True)
    print(f"64 B, {args.runs} pairs of {args.seconds} s: without {statistics.median(off) / 1e6:.2f}M msg/s "
          f"({min(off) / 1e6:.2f}-{max(off) / 1e6:.2f}), with {statistics.median(on) / 1e6:.2f}M "
          f"({min(on) / 1e6:.2f}-{max(on) / 1e6:.2f}); ratio {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f}); scrapes per run {statistics.median(scrapes)}")


if __name__ == "__main__":
    main()
