#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real Prometheus (Debian's prometheus) scraping a running netio_recv/netio_throughput pair:

  metrics_prometheus_test.py NETIO_RECV NETIO_THROUGHPUT [PROMETHEUS]

Prometheus runs on a free port with a generated configuration (scrape interval 1 s) and
scrapes both tools' --metrics. The sender is held to 400 Mb/s by --emulate, so that the rate
is steady; once the run is over, the test asks Prometheus' HTTP API for
rate(netio_socket_bytes_total[3s]) of the receiving socket at a time inside the run, and of
the sending socket, and compares each with the rate netio_recv printed (its --json: bytes
over seconds), within 10 %. Exits 77 (skipped) only when there is no prometheus binary.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.dont_write_bytecode = True
from metrics_lib import Tool  # noqa: E402

SKIP = 77


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base, path, **params):
    url = f"{base}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read().decode())


def main():
    recv, throughput = sys.argv[1:3]
    prometheus = sys.argv[3] if len(sys.argv) > 3 else (shutil.which("prometheus") or "/usr/bin/prometheus")
    if not os.access(prometheus, os.X_OK):
        print(f"SKIP: no Prometheus at {prometheus} (Debian package prometheus; scripts/install-deps.sh installs it)")
        sys.exit(SKIP)

    run_seconds = 5
    # Ports chosen here, so that Prometheus knows both targets from its start: it applies new
    # targets only every 5 s, and scrapes a target that is down every interval until it is up.
    receiver_metrics, sender_metrics, prom_port = free_port(), free_port(), free_port()
    work = tempfile.mkdtemp(prefix="netio-prometheus-")
    config = Path(work) / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: netio\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{receiver_metrics}']\n        labels: {{role: receiver}}\n"
        f"      - targets: ['127.0.0.1:{sender_metrics}']\n        labels: {{role: sender}}\n")
    server = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={work}/data",
                               f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{prom_port}"
    sender = receiver = None
    try:
        deadline = time.monotonic() + 15
        while True:  # ready, and scraping both targets (down for now)
            try:
                targets = api(base, "/api/v1/targets")["data"]["activeTargets"]
                if len(targets) == 2 and all(not t["lastScrape"].startswith("0001") for t in targets):
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                fail(f"Prometheus did not start: {server.stderr.read() if server.poll() is not None else 'timeout'}")
            time.sleep(0.1)
        receiver = Tool([recv, "-e", "tcp://127.0.0.1:0", "--json", "--report-interval", "0", "--metrics",
                         f"127.0.0.1:{receiver_metrics}", "--timeout", "60s"], wait_for="listening on")
        port = re.search(r"tcp://127\.0\.0\.1:(\d+)", receiver.line_with("listening on")).group(1)
        # Held to 400 Mb/s, so that the rate is steady whatever else the machine does.
        sender = Tool([throughput, "-e", f"tcp://127.0.0.1:{port}", "-s", "64KiB", "-t", f"{run_seconds}s",
                       "--emulate", "rate=400Mbps", "--metrics", f"127.0.0.1:{sender_metrics}", "--timeout", "60s"])
        started = time.time()
        if sender.wait(60) != 0:
            fail(f"netio_throughput failed: {''.join(sender.stderr_lines)}")
        if receiver.wait(60) != 0:
            fail(f"netio_recv failed: {''.join(receiver.stderr_lines)}")
        result = json.loads(receiver.stdout)["results"][0]
        printed = result["bytes"] / result["seconds"]
        time.sleep(1)  # the last scrapes
        at = started + run_seconds - 1  # inside the run: [3s] before it holds 3 or 4 scrapes
        for socket_kind, role in (("high_throughput_receive", "receiver"), ("high_throughput_send", "sender")):
            query = f'rate(netio_socket_bytes_total{{socket="{socket_kind}",role="{role}"}}[3s])'
            answer = api(base, "/api/v1/query", query=query, time=f"{at:.3f}")
            series = answer.get("data", {}).get("result", [])
            if answer.get("status") != "success" or len(series) != 1:
                stored = api(base, "/api/v1/query", query="netio_socket_bytes_total[30s]", time=f"{time.time():.3f}")
                fail(f"{query} at {at:.3f}: {answer}; stored: {stored}")
            measured = float(series[0]["value"][1])
            ratio = measured / printed
            print(f"{query}: {measured / 1e6:.1f} MB/s; netio_recv printed {printed / 1e6:.1f} MB/s ({ratio:.3f})")
            if not 0.9 <= ratio <= 1.1:
                fail(f"Prometheus' rate differs from the tool's by more than 10 % ({ratio:.3f})")
    finally:
        for tool in (sender, receiver):
            if tool:
                tool.kill()
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(work, ignore_errors=True)
    print("Prometheus scraped netio_recv and netio_throughput; its rates match what they printed")


if __name__ == "__main__":
    main()
