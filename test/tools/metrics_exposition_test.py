#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tools' --metrics end to end: each tool's exposition, scraped while it runs, parsed by
python3-prometheus-client's parser (every line valid, each family typed once, each series
once, netio_ names, counters ending in _total), with the families of what the tool runs:

  metrics_exposition_test.py NETIO_RECV NETIO_THROUGHPUT NETIO_TSBENCH

- netio_recv / netio_throughput: the high-throughput sockets, bytes agreeing with the sender;
- netio_throughput --publish / netio_recv --subscribe: the pub/sub sockets;
- netio_tsbench (a local run, DFS): the time-slice senders, receivers and the DDE, node= set;
- anything but GET /metrics: 404;
- netio_recv --influx udp://: datagrams of whole lines of the line protocol's grammar, the last
  push (after the sockets closed) carrying the totals the tool printed;
- netio_tsbench --simulate refuses --metrics and --influx (model time, docs/design/metrics.md).
"""
import json
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.dont_write_bytecode = True
from metrics_lib import Tool, check_exposition, has, scrape, value  # noqa: E402


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


SEEN = set()
# InfluxDB line protocol as netio writes it: measurement[,tag=value...] value=FLOAT TIMESTAMP.
INFLUX_KEY = r"(?:[^,=\s\\]|\\[,= \\])+"
INFLUX_LINE = re.compile(rf"^(?:[^,\s\\]|\\[, \\])+(?:,{INFLUX_KEY}={INFLUX_KEY})* "
                         r"value=-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)? [0-9]+$")


def port_in(line):
    return re.search(r"tcp://127\.0\.0\.1:(\d+)", line).group(1)


def scrape_until(tool, condition, what, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        samples = check_exposition(scrape(tool.url), tool.argv[0])
        SEEN.update(name for name, _ in samples)
        if condition(samples):
            return samples
        if time.monotonic() > deadline:
            fail(f"{Path(tool.argv[0]).name}: no {what} within {timeout} s: {sorted(samples)[:20]}")
        time.sleep(0.2)


def main():
    recv, throughput, tsbench = sys.argv[1:4]
    metrics = ["--metrics", "127.0.0.1:0", "--timeout", "60s"]

    # A high-throughput pair; the receiver also pushes InfluxDB lines over UDP.
    influx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    influx.bind(("127.0.0.1", 0))
    influx.settimeout(5)
    receiver = Tool([recv, "-e", "tcp://127.0.0.1:0", "-t", "2s", "--report-interval", "0", "--json", "--influx",
                     f"udp://127.0.0.1:{influx.getsockname()[1]}", "--influx-interval", "200ms"] + metrics,
                    wait_for="listening on")
    port = port_in(receiver.line_with("listening on"))
    sender = Tool([throughput, "-e", f"tcp://127.0.0.1:{port}", "-t", "1s", "-s", "64"] + metrics)
    received = scrape_until(receiver, lambda s: value(s, "netio_socket_bytes_total",
                                                       socket="high_throughput_receive") > 0, "bytes received")
    for name in ("messages", "bytes", "pages", "flushes", "backpressure_waits", "connections", "disconnects",
                 "zero_copy_messages", "budget_refusals"):
        check(has(received, f"netio_socket_{name}_total", socket="high_throughput_receive"),
              f"netio_recv: no netio_socket_{name}_total: {sorted(received)}")
    for name in ("budget_held_bytes", "budget_peak_bytes", "budget_limit_bytes", "replies_queued"):
        check(has(received, f"netio_socket_{name}", socket="high_throughput_receive"),
              f"netio_recv: no netio_socket_{name}: {sorted(received)}")
    check(value(received, "netio_socket_budget_held_bytes", budget="own") > 0, "netio_recv: no budget held")
    try:
        urllib.request.urlopen(receiver.url.replace("/metrics", "/"), timeout=5)
        fail("GET / answered")
    except urllib.error.HTTPError as e:
        check(e.code == 404, f"GET /: HTTP {e.code}")
    lines = []
    while not any(l.startswith("netio_socket_bytes_total,") and not l.endswith(" value=0") for l in
                  (line.rsplit(" ", 1)[0] for line in lines)):
        datagram = influx.recv(65536).decode()
        check(len(datagram) <= 1400 and datagram.endswith("\n"), f"influx datagram: {datagram!r}")
        lines += datagram.splitlines()
    check(sender.wait() == 0, f"netio_throughput failed: {''.join(sender.stderr_lines)}")
    check(receiver.wait() == 0, f"netio_recv failed: {''.join(receiver.stderr_lines)}")
    influx.settimeout(0.5)  # what was pushed up to the end, the last push included
    try:
        while True:
            lines += influx.recv(65536).decode().splitlines()
    except socket.timeout:
        pass
    for line in lines:
        check(INFLUX_LINE.match(line), f"not line protocol: {line!r}")
    # The last push (the latest timestamp) came after the receive socket closed: it carries the
    # run's totals, the tool's payload and its three control frames (run begin and end, end of
    # stream: 48 bytes each, tools/common/control_frame.hpp).
    printed = json.loads(receiver.stdout)["results"][0]
    last_push = max(int(line.rsplit(" ", 1)[1]) for line in lines)
    final = {}
    for line in lines:
        key, field, time_ns = line.rsplit(" ", 2)
        if int(time_ns) == last_push and "socket=high_throughput_receive" in key:
            final[key.split(",")[0]] = float(field.split("=")[1])
    check(final.get("netio_socket_messages_total") == printed["messages"] + 3 and
          final.get("netio_socket_bytes_total") == printed["bytes"] + 3 * 48,
          f"netio_recv printed {printed['messages']} messages, {printed['bytes']} bytes; its last influx push "
          f"{final.get('netio_socket_messages_total')}, {final.get('netio_socket_bytes_total')}")

    # Publish/subscribe.
    publisher = Tool([throughput, "--publish", "-e", "tcp://127.0.0.1:0", "--tags", "7", "--subscribers", "1", "-s", "64",
                      "-t", "1s"] + metrics, wait_for="tcp://127.0.0.1:")
    port = port_in(publisher.line_with("tcp://127.0.0.1:"))
    subscriber = Tool([recv, "--subscribe", "-e", f"tcp://127.0.0.1:{port}", "--tags", "7", "--report-interval",
                       "0"] + metrics)
    published = scrape_until(publisher, lambda s: value(s, "netio_publish_deliveries_total") > 0, "deliveries")
    for name in ("netio_publish_messages_total", "netio_publish_dropped_total", "netio_publish_subscribers",
                 "netio_publish_subscriptions", "netio_publish_subscribers_lost_total"):
        check(has(published, name), f"publisher: no {name}")
    subscribed = scrape_until(subscriber, lambda s: value(s, "netio_subscribe_messages_total") > 0, "messages")
    check(has(subscribed, "netio_subscribe_resubscriptions_total"), "subscriber: no resubscriptions")
    check(has(published, "netio_publish_tag_dropped_total", tag="other"), "publisher: no drops by tag")
    check(has(subscribed, "netio_subscribe_tag_dropped_total", tag="other"), "subscriber: no drops by tag")
    check(publisher.wait() == 0, f"netio_throughput --publish failed: {''.join(publisher.stderr_lines)}")
    check(subscriber.wait() == 0, f"netio_recv --subscribe failed: {''.join(subscriber.stderr_lines)}")

    # The scheduled push: a local DFS run of 2 inputs and 2 compute nodes.
    bench = Tool([tsbench, "--inputs", "2", "--computes", "2", "--scheduler", "dfs", "-t", "3s", "--contribution-size",
                  "4KiB", "--buffer-size", "256KiB", "--interval", "40", "--emulate", "in=200Mbps"] + metrics)
    pushed = scrape_until(bench, lambda s: value(s, "netio_timeslice_receiver_complete_total") > 0 and
                          value(s, "netio_dde_reports_total") > 0, "complete time-slices and DDE reports", timeout=15)
    for name, labels in (("netio_timeslice_sender_sent_total", {"node": "0", "input": "0"}),
                         ("netio_timeslice_sender_sent_total", {"node": "1", "input": "1"}),
                         ("netio_timeslice_receiver_held_bytes", {"node": "2"}),
                         ("netio_timeslice_receiver_complete_total", {"node": "3"}),
                         ("netio_dde_proposals_sent_total", {"node": "2"}),
                         ("netio_socket_bytes_total", {"socket": "low_latency_receive", "node": "3"}),
                         ("netio_timeslice_sender_retained", {"input": "0"}),
                         ("netio_timeslice_sender_reassigned_total", {"input": "0"}),
                         ("netio_timeslice_sender_push_blocked_seconds_total", {"input": "1"}),
                         ("netio_timeslice_receiver_inputs_connected", {"node": "2"}),
                         ("netio_dde_computes_reported_lost", {"node": "2"}),
                         ("netio_timeslice_sender_unbuilt_total", {"input": "1"}),
                         ("netio_timeslice_sender_lateness_seconds_sum", {"input": "0"}),
                         ("netio_timeslice_sender_lateness_seconds_count", {"input": "1"}),
                         ("netio_dde_fallback_active", {"node": "2"}),
                         ("netio_dde_fallbacks_on_spread_total", {"node": "2"}),
                         ("netio_timeslice_sender_assignments_taken_total", {"input": "0"}),
                         ("netio_timeslice_sender_computes_drained", {"input": "1"}),
                         ("netio_dde_assignment_share", {"compute": "0"}),
                         ("netio_dde_assignment_share", {"compute": "1"}),
                         ("netio_dde_assignment_interval", {}),
                         ("netio_dde_load_reports_total", {}),
                         ("netio_dde_assignments_sent_total", {}),
                         ("netio_dde_assignments_dropped_total", {})):
        check(has(pushed, name, **labels), f"netio_tsbench: no {name} {labels}: {sorted(pushed)[:40]}")
    check(value(pushed, "netio_dde_assignment_mode", mode="fixed") >= 1 and
          value(pushed, "netio_dde_assignment_mode", mode="load") == 0, "netio_tsbench: the fixed assignment not shown")
    check(value(pushed, "netio_dde_assignment_share", node="2", compute="0") == 20, "netio_tsbench: a fixed share "
          "is not an interval's 40 time-slices over 2 compute nodes")
    check(bench.wait(60) == 0, f"netio_tsbench failed: {''.join(bench.stderr_lines)}")
    # --simulate runs no socket, in model time: the options are refused, saying why.
    for option in (["--metrics", "127.0.0.1:0"], ["--influx", "udp://127.0.0.1:9"]):
        refused = subprocess.run([tsbench, "--simulate", "--inputs", "2", "--computes", "2", "--emulate", "in=1Gbps"] +
                                 option, capture_output=True, text=True, timeout=30)
        check(refused.returncode != 0 and "--simulate runs none" in refused.stderr,
              f"netio_tsbench --simulate {option}: exit {refused.returncode}, {refused.stderr!r}")
    # The Grafana dashboard asks for metrics that exist.
    dashboard = Path(__file__).resolve().parents[2] / "examples" / "grafana" / "netio.json"
    asked = set(re.findall(r"netio_[a-z_]+", dashboard.read_text()))
    check(asked, f"{dashboard}: no netio_ metric")
    check(asked <= SEEN, f"{dashboard} asks for metrics no tool exposes: {sorted(asked - SEEN)}")
    print("metrics exposition: the three tools' families parse, each once; the dashboard's metrics exist")


if __name__ == "__main__":
    main()
