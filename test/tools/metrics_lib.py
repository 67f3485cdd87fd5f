# SPDX-License-Identifier: MIT
"""What the metrics tests of the tools share: starting a tool with --metrics 127.0.0.1:0,
finding the URL it prints on stderr, scraping it, and parsing the exposition with
python3-prometheus-client's parser (Debian's; found also when the python running the test is
another one)."""
import os
import subprocess
import sys
import threading
import time
import urllib.request

sys.dont_write_bytecode = True
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # a python of its own (pyenv, a venv): Debian's package is still there
    sys.path.append("/usr/lib/python3/dist-packages")
    from prometheus_client.parser import text_string_to_metric_families  # noqa: E402


class Tool:
    """A tool started with --metrics 127.0.0.1:0; url is where it serves, stderr what it said."""

    def __init__(self, argv, stdin=None, wait_for=None):
        self.argv = [str(a) for a in argv]
        self.process = subprocess.Popen(self.argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr_lines = []
        self.url = None
        self.ready = threading.Event()
        self.wait_for = wait_for  # a text on stderr meaning "running" (e.g. "listening on")
        self.stdout = ""
        threading.Thread(target=self._read_stderr, daemon=True).start()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        deadline = time.monotonic() + 10
        while not self._started() and time.monotonic() < deadline and self.process.poll() is None:
            time.sleep(0.02)
        if not self._started():
            raise SystemExit(f"FAIL: {self.argv[0]} did not start: {''.join(self.stderr_lines)}")

    def _started(self):
        return self.url is not None and (self.wait_for is None or any(self.wait_for in l for l in self.stderr_lines))

    def _read_stderr(self):
        for line in self.process.stderr:
            self.stderr_lines.append(line)
            if line.startswith("metrics: http://"):
                self.url = line.split()[1]

    def _read_stdout(self):
        self.stdout = self.process.stdout.read()

    def line_with(self, text):
        return next((l for l in self.stderr_lines if text in l), None)

    def wait(self, timeout=30):
        code = self.process.wait(timeout)
        time.sleep(0.1)  # the readers' last lines
        return code

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def scrape(url):
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200, f"{url}: HTTP {response.status}"
        content_type = response.headers.get("Content-Type", "")
        assert content_type.startswith("text/plain; version=0.0.4"), f"{url}: Content-Type {content_type}"
        return response.read().decode()


def check_exposition(text, where):
    """Every line parses, each family has one TYPE, each series appears once; returns
    {(sample name, frozenset(labels)): value}."""
    types = [l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ")]
    assert len(types) == len(set(types)), f"{where}: a family typed twice: {types}"
    samples = {}
    families = list(text_string_to_metric_families(text))  # raises on any invalid line
    names = [f.name for f in families]
    assert len(names) == len(set(names)), f"{where}: family names not unique: {names}"
    for family in families:
        assert family.name.startswith("netio_"), f"{where}: {family.name} without the netio_ prefix"
        assert family.type in ("counter", "gauge", "summary"), f"{where}: {family.name} of type {family.type}"
        for s in family.samples:
            if family.type == "counter":
                assert s.name.endswith("_total"), f"{where}: counter sample {s.name} without _total"
            if family.type == "summary":
                assert s.name in (family.name + "_sum", family.name + "_count"), f"{where}: summary sample {s.name}"
            key = (s.name, frozenset(s.labels.items()))
            assert key not in samples, f"{where}: series {key} twice"
            samples[key] = s.value
    data_lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    assert len(data_lines) == len(samples), f"{where}: {len(data_lines)} lines, {len(samples)} samples parsed"
    return samples


def value(samples, name, **labels):
    """The sum over the series of `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, l), v in samples.items() if n == name and want <= set(l))


def has(samples, name, **labels):
    want = set(labels.items())
    return any(n == name and want <= set(l) for (n, l) in samples)
