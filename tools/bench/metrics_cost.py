#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cost of metrics on the data path (issue 52): high-throughput 64 B messages, msg/s as
netio_recv reports it, without --metrics against with --metrics on both tools and a scraper
fetching both /metrics every second. Runs alternate (off, on, off, on, ...); prints the
medians, the median of the per-pair ratios and their range. Take the benchmark lock:

  flock /tmp/netio-bench.lock tools/bench/metrics_cost.py build/release [--runs 5] [--seconds 3]

Where the machine's noise hides a 2 % effect, --scrape-cost N measures what a scrape costs
directly: the CPU time (user + system, every thread, /proc/PID/stat) an idle netio_recv spends
serving N scrapes of /metrics, less what it spends idle over the same wall time, per scrape.
The receive socket's series do not depend on the traffic, so this is a scrape's work during a
stream too; at one scrape per second it is that many microseconds of CPU per second.
"""
import argparse
import json
import os
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


def cpu_seconds(pid):
    """User + system CPU time of every thread of `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape_cost(bin_dir, scrapes):
    recv = subprocess.Popen([f"{bin_dir}/netio_recv", "-e", "tcp://127.0.0.1:0", "--report-interval", "0",
                             "--timeout", "600s", "--metrics", "127.0.0.1:0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = None
    while url is None:
        line = recv.stderr.readline()
        if not line:
            raise SystemExit("netio_recv ended before serving")
        if line.startswith("metrics: "):
            url = line.split()[1]
    size = len(urllib.request.urlopen(url, timeout=5).read())
    time.sleep(1)
    start_cpu, start = cpu_seconds(recv.pid), time.monotonic()
    for _ in range(scrapes):
        urllib.request.urlopen(url, timeout=5).read()
    busy_cpu, wall = cpu_seconds(recv.pid) - start_cpu, time.monotonic() - start
    idle_start = cpu_seconds(recv.pid)
    time.sleep(wall)
    idle_cpu = cpu_seconds(recv.pid) - idle_start
    recv.terminate()
    recv.wait(10)
    per_scrape = max(busy_cpu - idle_cpu, 0) / scrapes
    print(f"{scrapes} scrapes of {size} bytes in {wall:.2f} s: netio_recv's CPU {busy_cpu * 1e3:.1f} ms "
          f"(idle over the same time {idle_cpu * 1e3:.1f} ms): {per_scrape * 1e6:.1f} us of CPU per scrape, "
          f"{per_scrape * 100:.4f} % of one core at one scrape per second")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--scrape-cost", type=int, default=0, metavar="N",
                        help="measure the CPU time of N scrapes of an idle netio_recv instead")
    args = parser.parse_args()
    bin_dir = f"{args.build}/tools"
    if args.scrape_cost:
        scrape_cost(bin_dir, args.scrape_cost)
        return
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
