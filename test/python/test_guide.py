# SPDX-License-Identifier: MIT
"""The examples of docs/guide/python.md, each ```python block run as it stands, and the
programs of examples/python/ (the monitor against a publisher here, the time-slice consumer
with its own inputs)."""
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

import netio

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide" / "python.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(), re.MULTILINE | re.DOTALL)


def test_the_guide_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("block", range(len(BLOCKS)))
def test_guide_example_runs(block):
    done = subprocess.run([sys.executable, "-c", BLOCKS[block]], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_monitor_example_prints_rates(ctx):
    with netio.PublishSocket(ctx, "tcp://127.0.0.1:0") as publisher:
        monitor = subprocess.Popen([sys.executable, str(ROOT / "examples" / "python" / "monitor.py"),
                                    str(publisher.local_endpoint), "--tags", "3", "--seconds", "1.5"],
                                   stdout=subprocess.PIPE, text=True)
        try:
            assert publisher.wait_for_subscribers(1, timeout=10)
            deadline = time.monotonic() + 1
            while time.monotonic() < deadline:
                publisher.publish(3, b"x" * 64)
                time.sleep(0.001)
            publisher.flush()
            out, _ = monitor.communicate(timeout=20)
        finally:
            monitor.kill()
    assert monitor.returncode == 0
    assert re.search(r"tag 0x3: \d+ msg/s", out), out


def test_timeslice_consumer_example():
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "timeslice_consumer.py"), "--demo", "20"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20 time-slices" in done.stdout
