#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The never-worse matrix: DFS against best-effort on simulated networks and hosts.

Runs `netio_tsbench --simulate --compare --json` once per configuration below and checks
what a DAQ group needs before it switches DFS on: DFS's bandwidth at least 0.98x
best-effort's, its completion-spread median and p90 at most 1.02x best-effort's, and no
incomplete time-slice. Prints one table (Markdown with --markdown), exits 1 when a
configuration is worse, 0 when every one holds.

  tools/tsbench/never_worse.py [--build DIR] [--only NAME[,NAME...]] [--quick]
                               [--markdown] [--json FILE]

The runs are in model time, so their results do not depend on the machine's load; only
their wall time does (about 6 minutes on one core for the whole matrix, --quick: 1). The
ns-3 fat-tree rows need a netio_tsbench built with ns-3 (NETIO_WITH_NS3); without it they
are skipped (and said so). The lossless fat-tree rows need nothing more.
"""

import argparse
import json
import os
import subprocess
import sys
import time

DEFAULT_EMULATE = "delay=lognormal:mean=100us,sigma=1,clip=5ms;in=400Mbps"
BUSY_HOST = "lognormal:mean=500us,sigma=1.4,clip=20ms"  # the sockets' inputs, fitted

# The ns-3 fat-tree (netio_tsbench built with ns-3): inputs on two leaves of 4, compute nodes on
# two more, 64 KiB contributions, links at in=400Mbps, 128 KiB drop-tail ports, 9000-byte
# packets, TCP's minimum RTO lowered to 10 ms as in data centres (above 3 hops of full queues).
FAT_TREE = ["--network", "fat-tree", "--leaf-size", "4", "--contribution-size", "64KiB", "--interval", "64",
            "--warmup-intervals", "6", "--tcp-min-rto", "10ms"]

# The lossless fat-tree (our packet model, InfiniBand's link-level credits): the same leaves,
# contributions and links as FAT_TREE, 128 KiB of buffer per switch input port, 4096-byte
# packets; no TCP.
FAT_TREE_LOSSLESS = ["--network", "fat-tree-lossless", "--leaf-size", "4", "--contribution-size", "64KiB",
                     "--interval", "64", "--warmup-intervals", "6"]

# name, nodes per side, extra netio_tsbench arguments, what it stands for, quick?
MATRIX = [
    ("4x4", 4, [], "the default: fair ports, 16 credits, 16 KiB", True),
    ("8x8-2credits", 8, ["--credits", "2"], "the smallest buffer", True),
    ("16x16-32credits", 16, ["--credits", "32"], "a large buffer", False),
    ("8x8-4KiB", 8, ["--contribution-size", "4KiB"], "small contributions", True),
    ("8x8-1MiB", 8, ["--contribution-size", "1MiB", "--interval", "80", "-t", "40s",
                     "--warmup-intervals", "6"], "large contributions", False),
    ("16x16-fifo", 16, ["--port-sharing", "fifo"], "FIFO ports", True),
    ("16x16-fifo-short", 16, ["--port-sharing", "fifo", "--control-lane", "--interval", "160", "-t", "8s",
                              "--warmup-intervals", "6"],
     "FIFO ports, intervals of 10 rounds, control messages on a priority lane", False),
    ("64x64-fifo", 64, ["--port-sharing", "fifo", "--interval", "640", "-t", "15s"],
     "FIFO ports at scale", False),
    ("8x8-core-2to1", 8, ["--core", "1600Mbps"], "a switch core at half the ports' sum", True),
    ("32x32-core-4to1", 32, ["--core", "3200Mbps", "-t", "17s"], "a core at a quarter", False),
    ("32x32-lossless", 32, ["--network", "lossless", "-t", "17s"], "head-of-line blocking", False),
    ("16x16-sigma0.5", 16, ["--emulate", "delay=lognormal:mean=100us,sigma=0.5,clip=5ms;in=400Mbps"],
     "narrow delays", False),
    ("16x16-sigma2", 16, ["--emulate", "delay=lognormal:mean=100us,sigma=2,clip=5ms;in=400Mbps"],
     "wide delays", False),
    ("4x4-busy", 4, ["--timer-late", BUSY_HOST], "late timers: a busy host", True),
    ("8x8-busy-ports", 8, ["--timer-late", BUSY_HOST, "--port-late",
                           "lognormal:mean=500us,sigma=1.4,clip=10ms"],
     "late timers and late ports", False),
    ("8x8-compute-50pct", 8, ["--slowdown", "node:8,at=3s,for=30s,rate=50%"],
     "one compute node at half speed", True),
    ("24x24-compute-70pct", 24, ["--slowdown", "node:24,at=5s,for=5s,rate=70%", "-t", "15s"],
     "one compute node at 70 % for 5 s", False),
    ("8x8-compute-90pct", 8, ["--slowdown", "node:8,at=3s,for=30s,rate=90%"],
     "one compute node at 90 %", False),
    ("8x8-input-50pct", 8, ["--emulate", DEFAULT_EMULATE + ";out=800Mbps",
                            "--slowdown", "node:0,at=3s,for=30s,rate=50%"],
     "one input at half speed", False),
    ("8x8-fat-tree-1to1", 8, FAT_TREE + ["--oversubscription", "1", "-t", "4s"],
     "ns-3 fat-tree, Ethernet (drop-tail, TCP), 1:1", False),
    ("8x8-fat-tree-2to1", 8, FAT_TREE + ["--oversubscription", "2", "-t", "8s"], "the fat-tree at 2:1", False),
    ("8x8-fat-tree-4to1", 8, FAT_TREE + ["--oversubscription", "4", "-t", "10s"], "the fat-tree at 4:1", False),
    ("96x96", 96, ["--interval", "960", "-t", "17s"], "fair ports at scale", False),
    ("192x192", 192, ["--interval", "1920", "-t", "29s", "--warmup-intervals", "6"],
     "the largest", False),
    ("8x8-lossless-fat-tree-1to1", 8, FAT_TREE_LOSSLESS + ["--oversubscription", "1", "-t", "4s"],
     "lossless fat-tree (credit flow control), 1:1", False),
    ("8x8-lossless-fat-tree-2to1", 8, FAT_TREE_LOSSLESS + ["--oversubscription", "2", "-t", "8s"],
     "the lossless fat-tree at 2:1", False),
    ("8x8-lossless-fat-tree-4to1", 8, FAT_TREE_LOSSLESS + ["--oversubscription", "4", "-t", "10s"],
     "the lossless fat-tree at 4:1", False),
]

BANDWIDTH_AT_LEAST = 0.98
SPREAD_AT_MOST = 1.02


def find_tool(build):
    candidates = [build] if build else ["build/release", "build/test", "build"]
    for b in candidates:
        path = os.path.join(b, "tools", "tsbench", "netio_tsbench")
        if os.access(path, os.X_OK):
            return path
    sys.exit("never_worse.py: no netio_tsbench under " + ", ".join(candidates) +
             " (build it: cmake --preset release && cmake --build --preset release, or --build DIR)")


def run(tool, n, extra):
    args = [tool, "--simulate", "--compare", "--json", "--inputs", str(n), "--computes", str(n)] + extra
    started = time.monotonic()
    out = subprocess.run(args, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if "built without ns-3" in out.stderr:
        return None, seconds, args
    try:
        doc = json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.exit(f"never_worse.py: {' '.join(args)} exited {out.returncode} without JSON:\n{out.stderr}")
    return doc, seconds, args


def judge(doc):
    be, dfs = doc["best_effort"], doc["dfs"]
    r = {
        "gbps": dfs["gbps"] / be["gbps"],
        "median": dfs["spread_us"]["median"] / be["spread_us"]["median"],
        "p90": dfs["spread_us"]["p90"] / be["spread_us"]["p90"],
        "incomplete": be["incomplete"] + dfs["incomplete"],
    }
    r["holds"] = (r["gbps"] >= BANDWIDTH_AT_LEAST and r["median"] <= SPREAD_AT_MOST and
                  r["p90"] <= SPREAD_AT_MOST and r["incomplete"] == 0)
    return r


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Configurations: " + ", ".join(m[0] for m in MATRIX))
    parser.add_argument("--build", help="the build directory holding tools/tsbench/netio_tsbench")
    parser.add_argument("--only", help="comma-separated configuration names")
    parser.add_argument("--quick", action="store_true", help="the small configurations only")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--json", metavar="FILE", help="write every run's JSON and verdict to FILE")
    a = parser.parse_args()
    chosen = MATRIX
    if a.only:
        names = a.only.split(",")
        unknown = [x for x in names if x not in [m[0] for m in MATRIX]]
        if unknown:
            parser.error("unknown configuration(s): " + ", ".join(unknown))
        chosen = [m for m in MATRIX if m[0] in names]
    elif a.quick:
        chosen = [m for m in MATRIX if m[4]]
    tool = find_tool(a.build)

    rows, results, worse = [], [], 0
    for name, n, extra, what, _ in chosen:
        print(f"never_worse.py: {name} ({what})...", file=sys.stderr, flush=True)
        doc, seconds, args = run(tool, n, extra)
        if doc is None:  # a fat-tree row, and the tool was built without ns-3
            rows.append([name, "", "", "", "", "", "skipped: no ns-3"])
            continue
        r = judge(doc)
        worse += not r["holds"]
        be, dfs = doc["best_effort"], doc["dfs"]
        rows.append([name, f"{be['spread_us']['median'] / 1000:.3g} / {be['spread_us']['p90'] / 1000:.3g}",
                     f"{dfs['spread_us']['median'] / 1000:.3g} / {dfs['spread_us']['p90'] / 1000:.3g}",
                     f"{r['median']:.3f} / {r['p90']:.3f}", f"{r['gbps']:.3f}", str(r["incomplete"]),
                     "yes" if r["holds"] else "**no**"])
        results.append({"name": name, "what": what, "command": " ".join(args[1:]), "wall_s": round(seconds, 1),
                        "run": doc, "verdict": r})

    header = ["configuration", "BE spread med / p90 (ms)", "DFS spread med / p90 (ms)",
              "DFS / BE spread", "DFS / BE Gb/s", "incomplete", "never worse"]
    if a.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(x[i]) for x in rows + [header]) for i in range(len(header))]
        for row in [header] + rows:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    skipped = sum(1 for row in rows if row[-1].startswith("skipped"))
    if skipped:
        print(f"{skipped} fat-tree configuration(s) skipped: netio_tsbench was built without ns-3")
    print(f"{len(rows) - worse - skipped} of {len(rows) - skipped} configurations never worse "
          f"(bandwidth >= {BANDWIDTH_AT_LEAST}x, spread median and p90 <= {SPREAD_AT_MOST}x, 0 incomplete)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"criteria": {"bandwidth_at_least": BANDWIDTH_AT_LEAST, "spread_at_most": SPREAD_AT_MOST},
                       "configurations": results}, f, indent=1)
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
