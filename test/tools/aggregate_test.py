#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Unit tests of tools/bench/aggregate.py's paired ratios (python3 -m unittest, no pytest):
synthetic per-repetition results, no benchmark run.

  aggregate_test.py [unittest options]
"""
import json
import statistics
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "tools" / "bench"
sys.path.insert(0, str(BENCH))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import aggregate  # noqa: E402  (found through the path above)

# A throughput point where the medians mislead: netio ran at 0.83x raw TCP in repetitions 1
# and 2, and repetition 3 caught raw TCP in a slow spell. The medians (25 / 24 Gb/s) say
# 1.04 and would meet "Gb/s >= 0.85x raw TCP"; the paired ratios are 0.833, 0.833, 1.25.
NETIO_GBPS = {1: 20.0, 2: 30.0, 3: 25.0}
TCP_GBPS = {1: 24.0, 2: 36.0, 3: 20.0}


def tput_line(system, size, rep, gbps, kind="tput"):
    result = {"size": size, "messages": 1, "bytes": size, "seconds": 1.0, "msgs_per_s": gbps * 1e9 / 8 / size,
              "gbps": gbps}
    return {"kind": kind, "system": system, "size": size, "rep": rep, "data": {"results": [result]}}


def rtt_line(system, size, rep, median, p99=None, mean=None, kind="rtt"):
    stats = {"min": median / 2, "median": median, "mean": mean if mean is not None else median,
             "p90": median, "p99": p99 if p99 is not None else median * 1.5, "p999": median * 2,
             "max": median * 3, "stddev": 1.0}
    return {"kind": kind, "system": system, "size": size, "rep": rep,
            "data": {"size": size, "iterations": 100, "rtt_us": stats}}


def shm_memory_line(sender, receiver, interval=1.0, slack=1024):
    """memory_check.sh --scheme shm's JSON (the parts aggregate.py reads), from both series."""
    n = len(sender)
    baseline = max(1, min(int(10 / interval), n // 3))

    def flat(rss):
        first, last = max(rss[:baseline]), max(rss[n // 2:])
        return {"baseline_max_kib": first, "second_half_max_kib": last, "ok": last <= first + slack}
    data = {"scheme": "shm", "samples": n, "interval_s": interval, "rss_kib": {"sender": sender, "receiver": receiver},
            "flat": {"baseline_samples": baseline, "slack_kib": slack, "sender": flat(sender),
                     "receiver": flat(receiver)}}
    return {"kind": "shm_memory", "system": "shm", "size": 64, "rep": 1, "data": data}


def alt_line(system, size, rep, pairs, netio_median, tcp_median):
    """alternating_pingpong's JSON: the chunk pairs' ratios and both systems' statistics."""
    def stats(median):
        return {"iterations": 500 * len(pairs), "rtt_us": {"min": median / 2, "median": median, "mean": median,
                                                           "p90": median, "p99": median, "p999": median,
                                                           "max": median, "stddev": 0.0}}
    ratio = {"median": statistics.median(pairs), "min": min(pairs), "max": max(pairs), "q1": min(pairs),
             "q3": max(pairs), "pairs": pairs}
    return {"kind": "alt", "system": system, "size": size, "rep": rep,
            "data": {"size": size, "chunks": len(pairs), "per_chunk": 500, "busy_poll": system == "alt_busy",
                     "raw_epoll": False, "netio": stats(netio_median), "tcp": stats(tcp_median), "ratio": ratio}}


def run_aggregate(out, lines):
    """aggregate.py as compare.sh runs it, on `lines` written to out/results.jsonl."""
    (out / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    subprocess.run([sys.executable, str(BENCH / "aggregate.py"), "--raw", str(out / "results.jsonl"),
                    "--out", str(out), "--machine", "test", "--settings", "synthetic"], check=True,
                   stdout=subprocess.DEVNULL)


class PairedRatio(unittest.TestCase):
    def test_median_and_spread_of_the_per_repetition_ratios(self):
        p = aggregate.paired_ratio(NETIO_GBPS, TCP_GBPS)
        self.assertEqual(p["pairs"], 3)
        self.assertEqual(p["ratios"], [20 / 24, 30 / 36, 25 / 20])
        self.assertAlmostEqual(p["median"], 20 / 24)
        self.assertAlmostEqual(p["min"], 20 / 24)
        self.assertAlmostEqual(p["max"], 1.25)
        self.assertAlmostEqual(p["q1"], 20 / 24)
        self.assertAlmostEqual(p["q3"], (30 / 36 + 1.25) / 2)

    def test_differs_from_the_ratio_of_the_medians(self):
        of_medians = aggregate.ratio(aggregate.spread(list(NETIO_GBPS.values())),
                                     aggregate.spread(list(TCP_GBPS.values())))
        self.assertAlmostEqual(of_medians, 25 / 24)
        self.assertGreater(of_medians, 0.85)
        self.assertLess(aggregate.paired_ratio(NETIO_GBPS, TCP_GBPS)["median"], 0.85)

    def test_only_repetitions_with_both_values_count(self):
        p = aggregate.paired_ratio({1: 10.0, 2: 20.0, 3: None, 4: 8.0, 5: 6.0},
                                   {1: 5.0, 3: 4.0, 4: 0.0, 5: 3.0, 6: 1.0})
        self.assertEqual(p["ratios"], [2.0, 2.0])  # rep 2: no reference, 3: failed, 4: zero, 6: no netio
        self.assertEqual((p["median"], p["min"], p["max"], p["pairs"]), (2.0, 2.0, 2.0, 2))

    def test_one_pair_has_no_spread(self):
        p = aggregate.paired_ratio({7: 3.0}, {7: 2.0})
        self.assertEqual((p["median"], p["min"], p["max"], p["q1"], p["q3"], p["pairs"]), (1.5, 1.5, 1.5, 1.5, 1.5, 1))

    def test_no_common_repetition_is_not_measured(self):
        self.assertIsNone(aggregate.paired_ratio({1: 1.0}, {2: 1.0}))
        self.assertIsNone(aggregate.paired_ratio({}, {}))

    def test_an_even_number_of_pairs_takes_the_middle_two(self):
        p = aggregate.paired_ratio({1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0}, {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0})
        self.assertAlmostEqual(p["median"], 2.5)
        self.assertEqual((p["min"], p["max"]), (1.0, 4.0))


class AggregatedRun(unittest.TestCase):
    """aggregate.py run as compare.sh runs it, on the synthetic results.jsonl of lines()."""

    def lines(self):
        raise NotImplementedError

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        out = Path(self.dir.name)
        run_aggregate(out, self.lines())
        self.results = json.loads((out / "results.json").read_text())
        self.markdown = (out / "results.md").read_text()

    def tearDown(self):
        self.dir.cleanup()

    def target(self, name, size):
        found = [t for t in self.results["targets"] if t["target"] == name and t["size"] == size]
        self.assertEqual(len(found), 1, [t["target"] for t in self.results["targets"]])
        return found[0]


class FromResultsJsonl(AggregatedRun):
    def lines(self):
        lines = []
        for rep in (1, 2, 3):
            lines.append(tput_line("netio", 16384, rep, NETIO_GBPS[rep]))
            lines.append(tput_line("tcp", 16384, rep, TCP_GBPS[rep]))
            # round trips: netio is 1.1x raw TCP in every repetition, but raw TCP's slow
            # repetition is netio's fast one, so the medians (60 / 50 µs) say 1.2
            netio_rtt, tcp_rtt = {1: 55.0, 2: 60.0, 3: 66.0}[rep], {1: 50.0, 2: 54.5, 3: 60.0}[rep]
            lines.append(rtt_line("netio", 8, rep, netio_rtt))
            lines.append(rtt_line("tcp", 8, rep, tcp_rtt))
        lines.append({"kind": "rtt", "system": "netio", "size": 1024, "rep": 1, "data": None})
        return lines

    def test_throughput_target_is_judged_on_the_paired_ratio(self):
        t = self.target("netio/raw TCP Gb/s", 16384)
        self.assertAlmostEqual(t["ratio"], 20 / 24)
        self.assertAlmostEqual(t["paired"]["min"], 20 / 24)
        self.assertAlmostEqual(t["paired"]["max"], 1.25)
        self.assertEqual(t["paired"]["pairs"], 3)
        self.assertAlmostEqual(t["ratio_of_medians"], 25 / 24)
        self.assertEqual((t["numerator_median"], t["denominator_median"]), (25.0, 24.0))
        self.assertEqual(t["status"], "missed")  # the ratio of the medians would have met it

    def test_rtt_target_is_judged_on_the_paired_ratio(self):
        t = self.target("netio/raw blocking RTT median", 8)
        self.assertAlmostEqual(t["ratio"], 1.1)
        self.assertAlmostEqual(t["ratio_of_medians"], 60 / 54.5)
        self.assertEqual(t["status"], "missed")  # issue 14's one-connection target: at most 1.05
        p99 = self.target("netio/raw blocking RTT p99", 8)
        self.assertAlmostEqual(p99["ratio"], 1.1)

    def test_unmeasured_reference_is_not_measured(self):
        t = self.target("netio busy-poll/raw busy-poll RTT median", 8)
        self.assertIsNone(t["ratio"])
        self.assertIsNone(t["paired"])
        self.assertEqual(t["status"], "not measured")

    def test_bounds_carry_the_paired_ratio(self):
        rows = [b for b in self.results["bounds"] if b["bound"] == "netio_vs_oneway_median" and b["size"] == 8]
        self.assertEqual(len(rows), 1)
        self.assertIsNone(rows[0]["paired"])  # no tcp_oneway runs
        self.assertIsNone(rows[0]["ratio"])

    def test_markdown_shows_paired_ratio_with_spread_and_medians(self):
        self.assertIn("| netio/raw TCP Gb/s | 16 KiB | **0.833** (0.833–1.25) | 25 / 24 Gb/s | 1.04 | ≥ 0.85 | ❌ missed |",
                      self.markdown)
        self.assertIn("Failed runs (left out): rtt netio 1 KiB run 1", self.markdown)


class AlternatingChunks(AggregatedRun):
    """The POSIX round-trip targets judged on alternating_pingpong: every chunk pair of every
    repetition pooled, not the median of the runs' medians."""

    def lines(self):
        # The runs' own medians are 1.0 and 1.25 (the median of those, 1.125, would miss
        # <= 1.05); pooled, the five pairs 0.9, 1.0, 1.02, 1.2, 1.3 have the median 1.02.
        return [alt_line("alt_sleep", 8, 1, [0.9, 1.0, 1.02], 100.0, 98.0),
                alt_line("alt_sleep", 8, 2, [1.2, 1.3], 120.0, 100.0),
                alt_line("alt_busy", 1024, 1, [1.2, 1.15, 1.3], 13.0, 11.0),
                {"kind": "alt", "system": "alt_busy", "size": 1024, "rep": 2, "data": None}]

    def test_pairs_of_every_repetition_are_pooled(self):
        t = self.target("netio/raw blocking RTT median, alternating chunks", 8)
        self.assertAlmostEqual(t["ratio"], 1.02)
        self.assertEqual(t["paired"]["pairs"], 5)
        self.assertEqual((t["paired"]["min"], t["paired"]["max"]), (0.9, 1.3))
        self.assertEqual((t["numerator_median"], t["denominator_median"]), (110.0, 99.0))
        self.assertEqual(t["status"], "met")

    def test_busy_poll_threshold_and_a_failed_run(self):
        t = self.target("netio busy-poll/raw busy-poll RTT median, alternating chunks", 1024)
        self.assertAlmostEqual(t["ratio"], 1.2)
        self.assertEqual(t["paired"]["pairs"], 3)
        self.assertEqual(t["status"], "missed")  # at most 1.1
        self.assertIn("Failed runs (left out): alt alt_busy 1 KiB run 2", self.markdown)
        self.assertIn("| netio busy-poll/raw busy-poll RTT median, alternating chunks | 1 KiB | **1.2** (1.15–1.3) |",
                      self.markdown)


class ShmSection(AggregatedRun):
    """compare.sh's shm section (issue 39): its own kinds, paired like the rest, its own targets."""

    def lines(self):
        lines = []
        for rep in (1, 2, 3):
            # 1 MiB: shm:// 2.5x tcp:// in every repetition; 0.625, 0.417 and 0.6x the cold memcpy
            lines.append(tput_line("shm", 1 << 20, rep, {1: 100.0, 2: 50.0, 3: 75.0}[rep], kind="shm_tput"))
            lines.append(tput_line("tcp", 1 << 20, rep, {1: 40.0, 2: 20.0, 3: 30.0}[rep], kind="shm_tput"))
            lines.append(tput_line("memcpy", 1 << 20, rep, {1: 160.0, 2: 120.0, 3: 125.0}[rep], kind="shm_tput"))
            # 64 B: 1.4x tcp://, 4x ZeroMQ ipc://
            lines.append(tput_line("shm", 64, rep, 14.0, kind="shm_tput"))
            lines.append(tput_line("tcp", 64, rep, 10.0, kind="shm_tput"))
            lines.append(tput_line("zmq_ipc", 64, rep, 3.5, kind="shm_tput"))
            lines.append(rtt_line("shm_busy", 8, rep, 0.5, kind="shm_rtt"))
            lines.append(rtt_line("tcp_busy", 8, rep, 5.0, kind="shm_rtt"))
            lines.append(rtt_line("shm", 8, rep, 20.0, kind="shm_rtt"))
            lines.append(rtt_line("tcp", 8, rep, 21.0, kind="shm_rtt"))
        # the same netio system names in the main section stay apart from these
        lines.append(tput_line("tcp", 1 << 20, 1, 1.0))
        # the receiver grows by 2 MiB in the second half: not flat
        lines.append(shm_memory_line([28000] * 12, [12000] * 6 + [14048] * 6))
        return lines

    def test_throughput_targets(self):
        t = self.target("shm:// / tcp:// Gb/s", 1 << 20)
        self.assertAlmostEqual(t["ratio"], 2.5)
        self.assertEqual(t["status"], "met")
        t = self.target("shm:// / cold memcpy Gb/s", 1 << 20)
        self.assertAlmostEqual(t["ratio"], 0.6)  # the median of 100/160, 50/120, 75/125
        self.assertEqual(t["paired"]["pairs"], 3)
        self.assertEqual(t["status"], "met")
        self.assertEqual(self.target("shm:// / tcp:// msg/s", 64)["status"], "missed")  # 1.4 < 1.5
        self.assertAlmostEqual(self.target("shm:// / ZeroMQ ipc:// msg/s", 64)["ratio"], 4.0)
        self.assertEqual(self.results["shm"]["throughput"]["tcp"]["1048576"]["gbps"]["runs"], 3)

    def test_round_trip_targets(self):
        busy = self.target("shm:// / tcp:// busy-poll RTT median", 8)
        self.assertAlmostEqual(busy["ratio"], 0.1)
        self.assertEqual(busy["status"], "met")
        sleeping = self.target("shm:// / tcp:// sleeping RTT median", 8)
        self.assertAlmostEqual(sleeping["ratio"], 20 / 21)
        self.assertEqual(sleeping["status"], "missed")  # at most 0.8

    def test_memory_is_judged_on_both_sides_flatness(self):
        t = self.target("memory: shm:// sender and receiver RSS flat (memory_check.sh --scheme shm)", 64)
        self.assertEqual(t["status"], "missed")
        self.assertIn("receiver 11.7 → 13.7 MiB", t["measured"])
        self.assertEqual(self.results["shm"]["memory"]["rss_kib"]["sender"], [28000] * 12)

    def test_markdown_section(self):
        self.assertIn("### `shm://` against `tcp://`, the cold `memcpy` and ZeroMQ over `ipc://` (issue 39)",
                      self.markdown)
        self.assertIn("| 1 MiB | 8941 (5960–11.9k) | 3576 (2384–4768) | – | 75 (50–100) | 30 (20–40) | 125 (120–160) | "
                      "**2.5** (2.5–2.5) | – | **0.6** (0.417–0.625) |", self.markdown)
        self.assertIn("| busy-poll | 8 B | 0.5 (0.5–0.5) | 5 (5–5) |", self.markdown)
        self.assertIn("NOT flat", self.markdown)


class PlotScript(unittest.TestCase):
    """plots.gp must be a script gnuplot accepts whatever rows a run has."""

    def script_for(self, lines):
        with tempfile.TemporaryDirectory() as name:
            out = Path(name)
            run_aggregate(out, lines)
            return (out / "plots.gp").read_text()

    def test_no_throughput_rows_no_empty_plot_command(self):
        # compare.sh --rtt-only or --pubsub-only: gnuplot stopped at a bare "plot" (no curves)
        script = self.script_for([rtt_line("netio", 8, 1, 10.0), rtt_line("tcp", 8, 1, 9.0)])
        plots = [line for line in script.splitlines() if line.startswith("plot")]
        self.assertEqual(len(plots), 1, script)  # the round-trip plot alone
        self.assertNotIn("throughput_msgs.png", script)

    def test_throughput_rows_are_plotted(self):
        script = self.script_for([tput_line("netio", 64, 1, 1.0), tput_line("tcp", 64, 1, 2.0)])
        self.assertIn("set output 'throughput_msgs.png'", script)
        self.assertTrue(all(line.strip() != "plot" for line in script.splitlines()), script)


if __name__ == "__main__":
    unittest.main()
