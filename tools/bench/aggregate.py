#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Aggregates the runs of compare.sh (results.jsonl) into results.json, results.md and the
gnuplot data and script for the plots. Standard library only.

Every point (system, message size) was run once per repetition: we report the median over
the repetitions and the spread (min-max). For round trips each run has its own percentiles;
the median over the repetitions of each percentile is reported.

Ratios between two systems are paired: compare.sh runs the two back to back in every
repetition, the ratio is taken within each repetition, and the figure is the median of
those ratios, with their min-max (paired_ratio). A slow spell of the machine then hits both
sides of a ratio alike instead of landing on one system's median. The targets are judged
on the paired ratios; the ratio of the two medians is reported beside them.
"""
import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

TPUT_NAMES = {"netio": "netio POSIX", "netio_fabric": "netio libfabric tcp", "zmq": "ZeroMQ PUSH/PULL",
              "zmq_pubsub": "ZeroMQ XPUB(NODROP)/SUB", "tcp": "raw TCP",
              "netio_small_pages": "netio POSIX, smaller pages (compare.sh --small-pages)",
              "tcp_paged": "raw TCP, netio's sender shape (copy into pages + writer thread)"}
RTT_NAMES = {"netio": "netio POSIX", "netio_busy": "netio POSIX busy-poll", "netio_fabric": "netio libfabric tcp",
             "netio_fabric_busy": "netio libfabric tcp busy-poll",
             "tcp": "raw TCP blocking", "tcp_busy": "raw TCP busy-poll",
             "tcp_oneway": "raw TCP one-way connections blocking", "tcp_oneway_busy": "raw TCP one-way busy-poll",
             "zmq": "ZeroMQ REQ/REP", "fi_pingpong": "fi_pingpong -p tcp -e msg",
             "fi_twoway": "libfabric tcp, one connection (fi_oneway_pingpong)",
             "fi_oneway": "libfabric tcp, one-way connections (fi_oneway_pingpong --one-way)"}
# compare.sh's shm section (issue 39): kind shm_tput and shm_rtt, netio's tools over shm:// and over
# tcp:// run back to back, beside the cold memcpy bandwidth and ZeroMQ over ipc://.
SHM_TPUT_NAMES = {"shm": "netio shm://", "tcp": "netio tcp://", "memcpy": "cold memcpy (cold_memcpy)",
                  "zmq_ipc": "ZeroMQ PUSH/PULL ipc://"}
SHM_RTT_NAMES = {"shm": "netio shm:// sleeping", "tcp": "netio tcp:// sleeping", "shm_busy": "netio shm:// busy-poll",
                 "tcp_busy": "netio tcp:// busy-poll"}
PERCENTILES = ["min", "median", "mean", "p90", "p99", "p999", "max", "stddev"]


def size_text(n):
    for unit, factor in (("MiB", 1 << 20), ("KiB", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} B"


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def ratio(a, b):
    """The ratio of two medians (of spread()s), for information beside the paired ratio."""
    if a is None or b is None or not b["median"]:
        return None
    return a["median"] / b["median"]


def paired_ratio(numerators, denominators):
    """The ratio of two systems taken within each repetition, then summarised.

    numerators, denominators: {repetition: value}. Repetitions that only one side has, a
    value of None (a failed run, a percentile the program does not give) and a zero
    denominator are left out. Returns None when no repetition has both values, else
    {"median", "min", "max", "q1", "q3" (quartiles, inclusive method), "pairs" (how many
    ratios), "ratios" (in repetition order)}.
    """
    reps = sorted(set(numerators) & set(denominators))
    return ratio_summary([numerators[r] / denominators[r] for r in reps
                          if numerators[r] is not None and denominators[r] is not None and denominators[r]])


def ratio_summary(ratios):
    """paired_ratio()'s summary of a list of ratios (None when it is empty)."""
    if not ratios:
        return None
    q1, q3 = (statistics.quantiles(ratios, n=4, method="inclusive")[i] for i in (0, 2)) \
        if len(ratios) > 1 else (ratios[0], ratios[0])
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "q1": q1, "q3": q3, "pairs": len(ratios), "ratios": ratios}


def num(x, digits=3):
    """Numbers for the tables: 3 significant digits, k (10^3) from 10,000 and M (10^6) on."""
    if x is None:
        return "–"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.{digits}g}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.{digits}g}k"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def with_spread(s, scale=1.0):
    if s is None:
        return "–"
    return f"{num(s['median'] * scale)} ({num(s['min'] * scale)}–{num(s['max'] * scale)})"


def paired_text(p):
    """A paired ratio for the tables: **median** (min–max)."""
    if p is None:
        return "–"
    return f"**{num(p['median'])}** ({num(p['min'])}–{num(p['max'])})"


THROUGHPUT_KINDS = ("tput", "pubsub", "shm_tput")  # msgs_per_s and gbps; the other kinds are round trips
MEMORY_KINDS = ("memory", "shm_memory")  # memory_check.sh's JSON, one run each


def load(raw_path):
    """Reads results.jsonl. Returns (runs, memory, failed): runs[kind][system][size][metric] is
    {repetition: value} for the kinds "tput", "pubsub" and "shm_tput" (msgs_per_s and gbps) and
    "rtt" and "shm_rtt" (the PERCENTILES, µs, None where a program does not give one),
    runs["alt"][system][size] is {repetition: alternating_pingpong's JSON}; memory maps "memory"
    (tcp://) and "shm_memory" (shm://) to the memory check's JSON where it ran; failed lists the
    runs without data."""
    runs = {kind: defaultdict(lambda: defaultdict(dict)) for kind in ("tput", "rtt", "pubsub", "alt", "shm_tput",
                                                                       "shm_rtt")}
    failed = []
    memory = {}
    for line in Path(raw_path).read_text().splitlines():
        if not line.strip():
            continue
        run = json.loads(line)
        kind, system, size, rep, data = run["kind"], run["system"], run["size"], run["rep"], run["data"]
        if data is None:
            failed.append(f"{kind} {system} {size_text(size)} run {rep}")
            continue
        if kind in MEMORY_KINDS:  # memory_check.sh's one JSON line
            memory[kind] = data
            continue
        if kind == "alt":  # alternating_pingpong's JSON, kept whole: runs["alt"][system][size][rep]
            runs["alt"][system][size][rep] = data
            continue
        if kind in THROUGHPUT_KINDS:  # pubsub: msg/s per subscriber, Gb/s over all subscribers
            r = data["results"][0]
            values = {"msgs_per_s": r["msgs_per_s"], "gbps": r["gbps"]}
        else:
            values = {p: data["rtt_us"].get(p) for p in PERCENTILES}
        point = runs[kind][system][size]
        for metric, value in values.items():
            point.setdefault(metric, {})[rep] = value
    plain = {kind: {system: dict(sizes) for system, sizes in table.items()} for kind, table in runs.items()}
    return plain, memory, failed


def summarise(table):
    """runs[kind] -> per system, size and metric the spread() over the repetitions."""
    return {system: {size: {metric: spread(list(by_rep.values())) for metric, by_rep in point.items()}
                     for size, point in sizes.items()}
            for system, sizes in table.items()}


def paired(runs, kind, a, b, size, metric):
    """paired_ratio() of system a over system b at size, from load()'s runs."""
    def by_rep(system):
        return runs.get(kind, {}).get(system, {}).get(size, {}).get(metric, {})
    return paired_ratio(by_rep(a), by_rep(b))


def get(table, system, size, key):
    return table.get(system, {}).get(size, {}).get(key)


UNITS = {"msgs_per_s": "msg/s", "gbps": "Gb/s"}  # the RTT percentiles are in µs


def shm_memory_text(memory):
    """memory_check.sh --scheme shm's flatness, in words: each side's largest RSS in the first
    10 s and in the second half."""
    def mib(kib):
        return f"{kib / 1024:.1f}"
    flat = memory["flat"]
    sides = "; ".join(f"{side} {mib(flat[side]['baseline_max_kib'])} → {mib(flat[side]['second_half_max_kib'])} MiB"
                      for side in ("sender", "receiver"))
    return (f"RSS max, first {flat['baseline_samples'] * memory['interval_s']:g} s → second half, over "
            f"{memory['samples'] * memory['interval_s']:g} s: {sides}")


def shm_memory_flat(memory):
    return all(memory["flat"][side]["ok"] for side in ("sender", "receiver"))


def build_targets(runs, memory=None, small_pages="smaller", shm_memory=None):
    """The targets of issues 5, 14, 15 and 39, each judged met/missed on its paired ratio ("ratio": the median
    of the per-repetition ratios; "paired": paired_ratio()'s summary), with the medians of
    both systems and the ratio of those medians beside it."""
    tput, rtt = summarise(runs["tput"]), summarise(runs["rtt"])
    targets = []

    def add(name, kind, a, b, size, metric, threshold, at_least):
        table = {"tput": tput, "rtt": rtt}.get(kind) or summarise(runs.get(kind, {}))
        p = paired(runs, kind, a, b, size, metric)
        value = p["median"] if p else None
        status = "not measured" if value is None else (
            "met" if (value >= threshold if at_least else value <= threshold) else "missed")
        x, y = get(table, a, size, metric), get(table, b, size, metric)
        targets.append({"target": name, "size": size, "numerator": a, "denominator": b, "metric": metric,
                        "unit": UNITS.get(metric, "µs"), "ratio": value, "paired": p,
                        "numerator_median": x["median"] if x else None,
                        "denominator_median": y["median"] if y else None, "ratio_of_medians": ratio(x, y),
                        "threshold": f"{'≥' if at_least else '≤'} {threshold:g}", "status": status})

    sizes = sorted(tput.get("netio", {}))
    for size in sizes:
        if size < 16384:
            add("netio/ZeroMQ msg/s", "tput", "netio", "zmq", size, "msgs_per_s", 3, True)
        else:
            add("netio/raw TCP Gb/s", "tput", "netio", "tcp", size, "gbps", 0.85, True)
            if get(tput, "netio_small_pages", size, "gbps") is not None:
                add(f"netio/raw TCP Gb/s with page_size = {small_pages} (an option; default 1 MiB)", "tput",
                    "netio_small_pages", "tcp", size, "gbps", 0.85, True)
    # Issue 15: publish/subscribe beside ZeroMQ XPUB(NODROP)/SUB, high-throughput subscriptions.
    pubsub = summarise(runs.get("pubsub", {}))
    for k in (1, 4):
        for size in sorted(pubsub.get(f"netio_pubsub_{k}", {})):
            add(f"netio/ZeroMQ pub/sub msg/s per subscriber, {k} subscriber{'s' if k > 1 else ''}", "pubsub",
                f"netio_pubsub_{k}", f"zmq_pubsub_{k}", size, "msgs_per_s", 2 if size >= 65536 else 3, True)
    for size in sorted(pubsub.get("netio_pubsub_4", {})):
        if size >= 65536:
            add("netio pub/sub aggregate Gb/s, 4 subscribers/1 subscriber", "pubsub", "netio_pubsub_4",
                "netio_pubsub_1", size, "gbps", 0.8, True)
    # Issue 39: shm:// against netio over tcp://, the cold memcpy bandwidth and ZeroMQ over ipc://.
    for size in sorted(summarise(runs.get("shm_tput", {})).get("shm", {})):
        if size < 16384:
            add("shm:// / tcp:// msg/s", "shm_tput", "shm", "tcp", size, "msgs_per_s", 1.5, True)
            add("shm:// / ZeroMQ ipc:// msg/s", "shm_tput", "shm", "zmq_ipc", size, "msgs_per_s", 3, True)
        else:
            add("shm:// / tcp:// Gb/s", "shm_tput", "shm", "tcp", size, "gbps", 2, True)
            add("shm:// / cold memcpy Gb/s", "shm_tput", "shm", "memcpy", size, "gbps", 0.5, True)
    shm_rtt = summarise(runs.get("shm_rtt", {}))
    for size in sorted(set(shm_rtt.get("shm", {})) | set(shm_rtt.get("shm_busy", {}))):
        add("shm:// / tcp:// busy-poll RTT median", "shm_rtt", "shm_busy", "tcp_busy", size, "median", 0.3, False)
        add("shm:// / tcp:// sleeping RTT median", "shm_rtt", "shm", "tcp", size, "median", 0.8, False)
    if shm_memory is not None or runs.get("shm_tput") or runs.get("shm_rtt"):
        name = "memory: shm:// sender and receiver RSS flat (memory_check.sh --scheme shm)"
        if shm_memory is None:
            targets.append({"target": name, "size": 64, "ratio": None, "threshold": "–", "status": "not measured"})
        else:
            flat = shm_memory["flat"]
            baseline_s = flat["baseline_samples"] * shm_memory["interval_s"]
            targets.append({"target": name, "size": 64, "ratio": None, "measured": shm_memory_text(shm_memory),
                            "threshold": f"second half ≤ first {baseline_s:g} s + {flat['slack_kib']} KiB",
                            "status": "met" if shm_memory_flat(shm_memory) else "missed"})
    for size in sorted(rtt.get("netio", {})):
        # Issue 14: one connection (pings and pongs share it, as replies).
        add("netio/raw blocking RTT median", "rtt", "netio", "tcp", size, "median", 1.05, False)
        add("netio/raw blocking RTT p99", "rtt", "netio", "tcp", size, "p99", 1.3, False)
        add("netio busy-poll/raw busy-poll RTT median", "rtt", "netio_busy", "tcp_busy", size, "median", 1.1, False)
    # The same two targets from alternating_pingpong: every chunk pair of every repetition.
    for system, name, threshold in (("alt_sleep", "netio/raw blocking RTT median, alternating chunks", 1.05),
                                    ("alt_busy", "netio busy-poll/raw busy-poll RTT median, alternating chunks",
                                     1.1)):
        for size, by_rep in sorted(runs.get("alt", {}).get(system, {}).items()):
            docs = list(by_rep.values())
            p = ratio_summary([r for d in docs for r in d["ratio"]["pairs"]])
            x = statistics.median(d["netio"]["rtt_us"]["median"] for d in docs)
            y = statistics.median(d["tcp"]["rtt_us"]["median"] for d in docs)
            targets.append({"target": name, "size": size, "numerator": f"{system} netio",
                            "denominator": f"{system} tcp", "metric": "median", "unit": "µs",
                            "ratio": p["median"] if p else None, "paired": p, "numerator_median": x,
                            "denominator_median": y, "ratio_of_medians": x / y if y else None,
                            "threshold": f"≤ {threshold:g}",
                            "status": "not measured" if p is None else ("met" if p["median"] <= threshold
                                                                        else "missed")})
    for size in sorted(tput.get("netio_fabric", {})):
        add("libfabric/POSIX Gb/s", "tput", "netio_fabric", "netio", size, "gbps", 0.8, True)
    # fi_pingpong always spins, so netio spins too (--busy-poll) for this one.
    for size in sorted(set(rtt.get("netio_fabric", {})) | set(rtt.get("netio_fabric_busy", {}))):
        add("libfabric busy-poll RTT mean/fi_pingpong mean (both spin)", "rtt", "netio_fabric_busy", "fi_pingpong",
            size, "mean", 1.15, False)
    name = "memory: sender RSS within its pool + overhead allowance, flat after warm-up (memory_check.sh)"
    if memory is None:
        targets.append({"target": name, "size": 64, "ratio": None, "threshold": "–", "status": "not measured"})
    else:
        def mib(kib):
            return f"{kib / 1024:.1f} MiB"
        targets.append({
            "target": name, "size": 64, "ratio": None,
            "measured": f"RSS max {mib(memory['rss_max_kib'])} with a {mib(memory['pool_kib'])} pool; "
                        f"growth {memory['growth_kib']} KiB over {memory['samples']} samples",
            "threshold": f"≤ pool + {mib(memory['overhead_limit_kib'])}; growth ≤ {memory['growth_limit_kib']} KiB",
            "status": "met" if memory["ok"] else "missed"})
    return targets


# "Against the same shape without netio": netio against raw TCP (or libfabric's own ping-pong)
# doing what netio's design does, and what that shape costs raw TCP itself. Each entry:
# (key, what, kind, numerator, denominator, metric, unit, sizes, note); sizes "large" are
# the sizes from 16 KiB on, "small" those below, "all" every size.
BOUNDS = [
    ("netio_vs_paged_gbps", "netio/raw TCP in netio's sender shape, Gb/s", "tput", "netio", "tcp_paged", "gbps",
     "Gb/s", "large",
     "netio against raw TCP that copies each message into 1 MiB pages and lets a second thread on the same CPU "
     "write full pages, as netio's sender does: at ≈ 1.0 a missed \"netio/raw TCP Gb/s ≥ 0.85\" is the cost "
     "of that shape, not of netio's code."),
    ("netio_vs_paged_msgs", "netio/raw TCP in netio's sender shape, msg/s", "tput", "netio", "tcp_paged",
     "msgs_per_s", "msg/s", "small",
     "The same for small messages, informative only (the targets there are against ZeroMQ): what netio's "
     "per-message work adds to the copy into pages."),
    ("paged_vs_tcp_gbps", "raw TCP in netio's sender shape/raw TCP, Gb/s", "tput", "tcp_paged", "tcp", "gbps",
     "Gb/s", "all",
     "What the shape itself costs raw TCP: from 16 KiB the copy into pages and the hand-over to a second thread, "
     "against 1 MiB writes straight from the caller's buffer (below 16 KiB raw TCP writes one message per "
     "send(), so pages win there)."),
    ("netio_vs_oneway_median", "netio/raw TCP one-way blocking, RTT median", "rtt", "netio", "tcp_oneway", "median",
     "µs", "all",
     "netio's blocking round trip against raw TCP on the same two one-way connections: at ≈ 1.0 a missed "
     "\"RTT median ≤ 1.15× raw blocking\" is the cost of the one-way send/receive connections (below 1.0: "
     "netio's POSIX receive socket lets the kernel acknowledge only after delivering, see below)."),
    ("netio_vs_oneway_p99", "netio/raw TCP one-way blocking, RTT p99", "rtt", "netio", "tcp_oneway", "p99",
     "µs", "all",
     "The same for the p99 (target \"p99 ≤ 1.3× raw blocking\")."),
    ("oneway_vs_tcp_median", "raw TCP one-way/raw TCP blocking, RTT median", "rtt", "tcp_oneway", "tcp", "median",
     "µs", "all",
     "What one-way connections cost raw blocking TCP (the receiving end of each connection sends pure ACKs "
     "instead of piggy-backing them on the reply)."),
    ("netio_busy_vs_oneway_busy_median", "netio busy-poll/raw TCP one-way busy-poll, RTT median", "rtt",
     "netio_busy", "tcp_oneway_busy", "median", "µs", "all",
     "netio busy-poll against raw busy-poll TCP on two one-way connections: at ≈ 1.0 a missed \"busy-poll "
     "median ≤ 1.3× raw busy-poll\" is the cost of the one-way connections."),
    ("oneway_busy_vs_busy_median", "raw TCP one-way busy-poll/raw TCP busy-poll, RTT median", "rtt",
     "tcp_oneway_busy", "tcp_busy", "median", "µs", "all",
     "What one-way connections cost raw busy-poll TCP that reads the plain way: Linux acknowledges a small pushed "
     "segment inside the recv() that drains it, so the ACK delays every message. netio's POSIX receive socket "
     "peeks, delivers, then drains, and its ACK follows the reply: netio is below raw TCP one-way above."),
    ("fabric_busy_vs_fi_pingpong_mean", "netio libfabric busy-poll/fi_pingpong, RTT mean", "rtt",
     "netio_fabric_busy", "fi_pingpong", "mean", "µs", "all",
     "netio over libfabric against libfabric's own ping-pong on the same provider, both spinning (the ratio of "
     "the libfabric RTT target; means, since fi_pingpong gives no median)."),
    ("fi_twoway_vs_fi_pingpong_mean", "libfabric one connection (our program)/fi_pingpong, RTT mean", "rtt",
     "fi_twoway", "fi_pingpong", "mean", "µs", "all",
     "Checks our libfabric reference against libfabric's own: ≈ 1.0 means fi_oneway_pingpong measures what "
     "fi_pingpong does (fi_pingpong injects messages under 128 B without a send completion; ours waits for one)."),
    ("fi_oneway_vs_twoway_mean", "libfabric one-way/one connection, RTT mean", "rtt", "fi_oneway", "fi_twoway",
     "mean", "µs", "all",
     "What one-way connections cost over libfabric's tcp provider without netio: two endpoints to progress "
     "every round, and the ACK the provider's own recv() sends before the data reaches the program (which "
     "netio cannot defer inside the provider). Above 1.3, \"≤ 1.3× fi_pingpong\" is out of reach on one-way "
     "connections over this provider."),
    ("netio_vs_2c_median", "netio one connection/two connections, blocking RTT median", "rtt", "netio", "netio_2c",
     "median", "µs", "all",
     "netio_pingpong's default (pongs are replies on the ping connection) against --two-connections (pongs on a "
     "second connection back, netio's shape before replies)."),
    ("netio_busy_vs_2c_median", "netio one connection/two connections, busy-poll RTT median", "rtt", "netio_busy",
     "netio_busy_2c", "median", "µs", "all", "The same, both sides spinning."),
    ("fabric_busy_vs_2c_mean", "netio libfabric one connection/two connections, busy-poll RTT mean", "rtt",
     "netio_fabric_busy", "netio_fabric_busy_2c", "mean", "µs", "all",
     "The same over libfabric's tcp provider, where two endpoints to progress every round cost most."),
    ("fabric_busy_vs_fi_oneway_mean", "netio libfabric busy-poll/libfabric one-way, RTT mean", "rtt",
     "netio_fabric_busy", "fi_oneway", "mean", "µs", "all",
     "netio over libfabric against libfabric on the same two one-way connections, both spinning: what netio's "
     "own code adds (copy into a send buffer, credits, the event loop)."),
]


def build_bounds(runs):
    """The rows of "Against the same shape without netio", for results.json and results.md:
    "ratio" is the paired ratio (median of the per-repetition ratios, "paired" its summary),
    "ratio_of_medians" the ratio of the two medians."""
    tput, rtt = summarise(runs["tput"]), summarise(runs["rtt"])
    rows = []
    for key, what, kind, a, b, metric, unit, which, note in BOUNDS:
        table = {"tput": tput, "rtt": rtt}.get(kind) or summarise(runs.get(kind, {}))
        sizes = sorted(set(table.get(a, {})) | set(table.get(b, {})))
        if which == "large":
            sizes = [s for s in sizes if s >= 16384]
        elif which == "small":
            sizes = [s for s in sizes if s < 16384]
        for size in sizes:
            x, y = get(table, a, size, metric), get(table, b, size, metric)
            p = paired(runs, kind, a, b, size, metric)
            rows.append({"bound": key, "what": what, "size": size, "numerator": a, "denominator": b,
                         "metric": metric, "unit": unit, "numerator_value": x, "denominator_value": y,
                         "ratio": p["median"] if p else None, "paired": p, "ratio_of_medians": ratio(x, y)})
    return rows


def shm_markdown(runs, shm_memory):
    """compare.sh's shm section (issue 39), or nothing when it did not run."""
    tput, rtt = summarise(runs.get("shm_tput", {})), summarise(runs.get("shm_rtt", {}))
    if not tput and not rtt and shm_memory is None:
        return []
    md = ["### `shm://` against `tcp://`, the cold `memcpy` and ZeroMQ over `ipc://` (issue 39)", "",
          "netio's tools over `shm://` and over `tcp://`, `cold_memcpy` (calls of the message size between two "
          "buffers much larger than the last-level cache, on the sender's CPU) and `zmq_throughput` over "
          "`ipc://`, back to back in each repetition.", ""]
    if tput:
        md += ["| size | shm:// msg/s | tcp:// msg/s | ZeroMQ ipc:// msg/s | shm:// Gb/s | tcp:// Gb/s | memcpy Gb/s | "
               "shm/tcp paired | shm/ZeroMQ ipc paired (msg/s) | shm/memcpy paired (Gb/s) |",
               "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for size in sorted(set().union(*(d.keys() for d in tput.values()))):
            cells = [with_spread(get(tput, system, size, metric)) for system, metric in
                     (("shm", "msgs_per_s"), ("tcp", "msgs_per_s"), ("zmq_ipc", "msgs_per_s"), ("shm", "gbps"),
                      ("tcp", "gbps"), ("memcpy", "gbps"))]
            cells += [paired_text(paired(runs, "shm_tput", "shm", b, size, metric)) for b, metric in
                      (("tcp", "msgs_per_s"), ("zmq_ipc", "msgs_per_s"), ("memcpy", "gbps"))]
            md.append(f"| {size_text(size)} | " + " | ".join(cells) + " |")
        md.append("")
    if rtt:
        md += ["| round trip | size | shm:// median µs | tcp:// median µs | shm:// p99 µs | tcp:// p99 µs | "
               "shm/tcp median paired |", "|---|---:|---:|---:|---:|---:|---:|"]
        for mode, a, b in (("sleeping", "shm", "tcp"), ("busy-poll", "shm_busy", "tcp_busy")):
            for size in sorted(set(rtt.get(a, {})) | set(rtt.get(b, {}))):
                md.append(f"| {mode} | {size_text(size)} | {with_spread(get(rtt, a, size, 'median'))} | "
                          f"{with_spread(get(rtt, b, size, 'median'))} | {with_spread(get(rtt, a, size, 'p99'))} | "
                          f"{with_spread(get(rtt, b, size, 'p99'))} | "
                          f"{paired_text(paired(runs, 'shm_rtt', a, b, size, 'median'))} |")
        md.append("")
    if shm_memory is not None:
        md += [f"Memory over `shm://` (64 B stream): {shm_memory_text(shm_memory)}; "
               f"{'flat' if shm_memory_flat(shm_memory) else 'NOT flat'}. Samples (KiB, every "
               f"{shm_memory['interval_s']:g} s): sender {shm_memory['rss_kib']['sender']}, "
               f"receiver {shm_memory['rss_kib']['receiver']}.", ""]
    return md


def markdown(runs, targets, bounds, failed, machine, settings, shm_memory=None):
    tput, rtt = summarise(runs["tput"]), summarise(runs["rtt"])
    md = [f"Machine: {machine}  ", f"Settings: {settings}", ""]
    md += ["Cells: median over the repetitions (min–max over the repetitions). Ratios *paired*: the two "
           "systems ran back to back in each repetition (in alternating order); the cell is the median of "
           "the per-repetition ratios in bold (their min–max). *of medians*: the ratio of the two medians, "
           "for comparison. The targets are judged on the paired ratios.", ""]
    sizes = sorted(set().union(*(d.keys() for d in tput.values()))) if tput else []
    md += ["### Throughput (receiver's view)", "",
           "| size | netio msg/s | ZeroMQ msg/s | netio/ZeroMQ paired | of medians | netio Gb/s | raw TCP Gb/s |"
           " netio/raw TCP paired | of medians | ZeroMQ Gb/s |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for size in sizes:
        n_m, z_m = get(tput, "netio", size, "msgs_per_s"), get(tput, "zmq", size, "msgs_per_s")
        n_g, t_g = get(tput, "netio", size, "gbps"), get(tput, "tcp", size, "gbps")
        md.append(f"| {size_text(size)} | {with_spread(n_m)} | {with_spread(z_m)} | "
                  f"{paired_text(paired(runs, 'tput', 'netio', 'zmq', size, 'msgs_per_s'))} | "
                  f"{num(ratio(n_m, z_m))} | {with_spread(n_g)} | {with_spread(t_g)} | "
                  f"{paired_text(paired(runs, 'tput', 'netio', 'tcp', size, 'gbps'))} | {num(ratio(n_g, t_g))} | "
                  f"{with_spread(get(tput, 'zmq', size, 'gbps'))} |")
    md += ["", "raw TCP writes the message size per `send()` below 16 KiB and 1 MiB per `send()` from 16 KiB on "
           "(the one-stream ceiling the ≥ 16 KiB target is measured against).", ""]
    if "netio_fabric" in tput:
        md += ["### libfabric back-end (`fabric://…?provider=tcp`) vs POSIX", "",
               "| size | libfabric Gb/s | POSIX Gb/s | libfabric/POSIX paired | of medians |",
               "|---:|---:|---:|---:|---:|"]
        for size in sorted(tput["netio_fabric"]):
            f_g, p_g = get(tput, "netio_fabric", size, "gbps"), get(tput, "netio", size, "gbps")
            md.append(f"| {size_text(size)} | {with_spread(f_g)} | {with_spread(p_g)} | "
                      f"{paired_text(paired(runs, 'tput', 'netio_fabric', 'netio', size, 'gbps'))} | "
                      f"{num(ratio(f_g, p_g))} |")
        md.append("")
    pubsub = summarise(runs.get("pubsub", {}))
    if pubsub:
        md += ["### Publish/subscribe (high-throughput subscriptions; netio beside ZeroMQ XPUB(NODROP)/SUB)", "",
               "| size | subscribers | netio msg/s per subscriber | ZeroMQ msg/s per subscriber | netio/ZeroMQ paired |"
               " of medians | netio Gb/s, all subscribers | ZeroMQ Gb/s, all subscribers |",
               "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for size in sorted(set().union(*(d.keys() for d in pubsub.values()))):
            for k in (1, 4):
                n, z = f"netio_pubsub_{k}", f"zmq_pubsub_{k}"
                n_m, z_m = get(pubsub, n, size, "msgs_per_s"), get(pubsub, z, size, "msgs_per_s")
                md.append(f"| {size_text(size)} | {k} | {with_spread(n_m)} | {with_spread(z_m)} | "
                          f"{paired_text(paired(runs, 'pubsub', n, z, size, 'msgs_per_s'))} | {num(ratio(n_m, z_m))} | "
                          f"{with_spread(get(pubsub, n, size, 'gbps'))} | {with_spread(get(pubsub, z, size, 'gbps'))} |")
            if get(pubsub, "netio_pubsub_4", size, "gbps") is not None:
                md.append(f"| {size_text(size)} | 4 vs 1 | | | netio Gb/s 4/1 paired: "
                          f"{paired_text(paired(runs, 'pubsub', 'netio_pubsub_4', 'netio_pubsub_1', size, 'gbps'))} | | | |")
        md.append("")
    md += shm_markdown(runs, shm_memory)
    md += ["### Round-trip time, µs", "",
           "| size | system | min | median | mean | p90 | p99 | p99.9 | max | stddev |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rtt_sizes = sorted(set().union(*(d.keys() for d in rtt.values()))) if rtt else []
    for size in rtt_sizes:
        for system, name in RTT_NAMES.items():
            row = rtt.get(system, {}).get(size)
            if row is None:
                continue
            cells = [with_spread(row[p]) if p in ("median", "p99") else num(row[p]["median"] if row[p] else None)
                     for p in PERCENTILES]
            md.append(f"| {size_text(size)} | {name} | " + " | ".join(cells) + " |")
    md += ["", "fi_pingpong reports a mean only (2 × its usec/xfer). \"one-way\": pings and pongs on two "
           "connections that carry data one way each, like netio's send and receive sockets.", ""]
    rtt_ratios = [("median netio/raw", "netio", "tcp", "median"), ("p99 netio/raw", "netio", "tcp", "p99"),
                  ("median busy-poll netio/raw", "netio_busy", "tcp_busy", "median"),
                  ("median netio/ZeroMQ", "netio", "zmq", "median"), ("p99 netio/ZeroMQ", "netio", "zmq", "p99"),
                  ("libfabric busy-poll mean/fi_pingpong", "netio_fabric_busy", "fi_pingpong", "mean"),
                  ("libfabric blocking mean/fi_pingpong", "netio_fabric", "fi_pingpong", "mean")]
    for title, cell in (("Paired ratios", lambda size, a, b, p: paired_text(paired(runs, "rtt", a, b, size, p))),
                        ("Ratios of the medians",
                         lambda size, a, b, p: num(ratio(get(rtt, a, size, p), get(rtt, b, size, p))))):
        md += [f"{title}:", "", "| size | " + " | ".join(r[0] for r in rtt_ratios) + " |",
               "|---:|" + "---:|" * len(rtt_ratios)]
        for size in rtt_sizes:
            md.append(f"| {size_text(size)} | " + " | ".join(cell(size, a, b, p) for _, a, b, p in rtt_ratios) + " |")
        md.append("")
    md += ["fi_pingpong always spins: the libfabric target compares netio busy-poll with it; the blocking "
           "ratio is for information."]
    md += ["", "### Targets (issues 5, 14, 15 and 39)", "",
           "Judged on the paired ratio: the median over the repetitions of the ratio within each repetition "
           "(min–max of those ratios); beside it the medians of both systems and their ratio. *Alternating "
           "chunks* (alternating_pingpong): the median over every pair of chunks of every repetition of "
           "netio's chunk median over the raw TCP chunk's beside it, between the same two processes; the "
           "medians beside it are the median over the repetitions of each run's.", "",
           "| target | size | paired ratio | medians (system / reference) | ratio of medians | target | status |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for t in targets:
        status = {"met": "✅ met", "missed": "❌ missed"}.get(t["status"], t["status"])
        size = size_text(t["size"]) if t["size"] else "–"
        if "paired" not in t:  # the memory target: a measurement, no ratio
            measured, medians, of_medians = t.get("measured", "–"), "–", "–"
        else:
            measured = paired_text(t["paired"])
            medians = f"{num(t['numerator_median'])} / {num(t['denominator_median'])} {t['unit']}"
            of_medians = num(t["ratio_of_medians"])
        md.append(f"| {t['target']} | {size} | {measured} | {medians} | {of_medians} | {t['threshold']} | {status} |")
    md += ["", "### Against the same shape without netio", "",
           "The design fixes two shapes: the high-throughput sender copies messages into pages on the caller's "
           "thread and an event-loop thread writes them; sends and receives use separate one-way connections. "
           "Raw TCP and libfabric in those shapes (`tcp_throughput --paged`, `tcp_pingpong --one-way`, "
           "`fi_oneway_pingpong --one-way`) bound what netio can "
           "reach. When a target above is missed while netio is at or near 1.0 here, the miss is the cost of "
           "the shape the design mandates, not of netio's code.", "",
           "| comparison | size | numerator | reference | paired ratio | of medians |", "|---|---:|---:|---:|---:|---:|"]
    for b in bounds:
        md.append(f"| {b['what']} | {size_text(b['size'])} | {with_spread(b['numerator_value'])} {b['unit']} | "
                  f"{with_spread(b['denominator_value'])} {b['unit']} | {paired_text(b['paired'])} | "
                  f"{num(b['ratio_of_medians'])} |")
    md.append("")
    shown = {b["bound"] for b in bounds}
    md += [f"- *{what}*: {note}" for key, what, _, _, _, _, _, _, note in BOUNDS if key in shown]
    if failed:
        md += ["", "Failed runs (left out): " + "; ".join(failed)]
    return "\n".join(md) + "\n"


def plots(out, tput, rtt):
    """Data files and a gnuplot script (run by compare.sh in the output directory)."""
    for system in TPUT_NAMES:
        if system in tput:
            lines = [f"{size} {d['msgs_per_s']['median']} {d['msgs_per_s']['min']} {d['msgs_per_s']['max']} "
                     f"{d['gbps']['median']} {d['gbps']['min']} {d['gbps']['max']}"
                     for size, d in sorted(tput[system].items()) if d["gbps"]]
            (out / f"tput_{system}.dat").write_text("\n".join(lines) + "\n")
    shown = ["min", "median", "p90", "p99", "p999"]
    labels = ["min", "median", "p90", "p99", "p99.9"]
    rtt_sizes = sorted(set().union(*(d.keys() for d in rtt.values()))) if rtt else []
    for size in rtt_sizes:
        lines = ["system " + " ".join(labels)]
        for system, name in RTT_NAMES.items():
            row = rtt.get(system, {}).get(size)
            if row is None or system == "fi_pingpong":
                continue
            lines.append(f'"{name}" ' + " ".join(f"{row[p]['median']:.3f}" if row[p] else "NaN" for p in shown))
        (out / f"rtt_{size}.dat").write_text("\n".join(lines) + "\n")

    tput_systems = [s for s in TPUT_NAMES if s in tput]

    def quoted(text):  # a gnuplot single-quoted string: '' is a quote
        return "'" + text.replace("'", "''") + "'"

    def tput_plot(png, column, ylabel, title, key):
        if not tput_systems:  # --pubsub-only, --rtt-only: no throughput rows, no plot
            return ""
        curves = ", ".join(f"'tput_{s}.dat' using 1:{column}:{column + 1}:{column + 2} with yerrorlines "
                           f"title {quoted(TPUT_NAMES[s])}" for s in tput_systems)
        return (f"set output '{png}'\nset key {key} box opaque\nset ylabel '{ylabel}'\nset title '{title}'\n"
                f"plot {curves}\n")

    # noenhanced: system names are printed as they are (fi_oneway_pingpong has underscores).
    gp = ["set terminal pngcairo noenhanced size 900,560 font 'sans,10'",
          "set logscale x 2", "set logscale y 10", "set grid", "set xlabel 'message size'",
          "set xtics ('8 B' 8, '64 B' 64, '1 KiB' 1024, '16 KiB' 16384, '64 KiB' 65536, '1 MiB' 1048576)",
          tput_plot("throughput_msgs.png", 2, "messages per second (median, bars: min–max)",
                    "Throughput on loopback: messages per second", "bottom left"),
          tput_plot("throughput_gbps.png", 5, "Gb/s of payload (median, bars: min–max)",
                    "Throughput on loopback: Gb/s", "bottom right"),
          "unset logscale x", "set xtics auto", "set format x '%g'", "set style data histograms",
          "set style histogram clustered gap 1", "set style fill solid 0.8 border -1", "set boxwidth 0.9",
          "set key top left", "set xlabel ''",
          # Long system names: slanted below their bars, with room on the left for the first.
          "set terminal pngcairo noenhanced size 1000,760 font 'sans,10'",
          "set xtics nomirror rotate by 40 right", "set bmargin 20", "set lmargin 32", "set rmargin 3",
          "set xtics format ''", "set yrange [*:*]"]
    for size in rtt_sizes:
        gp.append(f"set output 'rtt_{size}.png'")
        gp.append("set ylabel 'µs (median over the runs), log scale'")
        gp.append(f"set title 'Round-trip time, {size_text(size)} messages'")
        # one cluster per system, one bar per percentile
        parts = [f"'rtt_{size}.dat' using {col + 2}:xtic(1) title columnheader({col + 2})"
                 for col in range(len(shown))]
        gp.append("plot " + ", ".join(parts))
    (out / "plots.gp").write_text("\n".join(line for line in gp if line) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--raw", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--machine", default="")
    parser.add_argument("--settings", default="")
    parser.add_argument("--small-pages", default="smaller", help="the page size of netio_small_pages, for labels")
    args = parser.parse_args()
    out = Path(args.out)
    runs, memories, failed = load(args.raw)
    memory, shm_memory = memories.get("memory"), memories.get("shm_memory")
    tput, rtt = summarise(runs["tput"]), summarise(runs["rtt"])
    if args.small_pages != "smaller":
        TPUT_NAMES["netio_small_pages"] = f"netio POSIX, {args.small_pages} pages"
    targets = build_targets(runs, memory, args.small_pages, shm_memory)
    bounds = build_bounds(runs)

    def json_keys(summary):  # JSON object keys are strings: the sizes as text
        return {s: {str(k): v for k, v in d.items()} for s, d in summary.items()}

    result = {"machine": args.machine, "settings": args.settings,
              "throughput": json_keys(tput), "rtt_us": json_keys(rtt), "pubsub": json_keys(summarise(runs["pubsub"])),
              "systems": {"throughput": TPUT_NAMES, "rtt": RTT_NAMES},
              "memory": memory,
              "shm": {"throughput": json_keys(summarise(runs["shm_tput"])),
                      "rtt_us": json_keys(summarise(runs["shm_rtt"])),
                      "memory": shm_memory, "systems": {"throughput": SHM_TPUT_NAMES, "rtt": SHM_RTT_NAMES}},
              "targets": targets, "bounds": bounds, "failed_runs": failed}
    (out / "results.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    (out / "results.md").write_text(markdown(runs, targets, bounds, failed, args.machine, args.settings, shm_memory))
    plots(out, tput, rtt)


if __name__ == "__main__":
    main()
