#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CTest check of compare.sh's shm section (label "bench"): one short run of
# `compare.sh --shm-only` (a small and a large size, one repetition, a 2 s memory check over
# shm://) must give every row of the section a figure: shm:// and tcp:// throughput, cold
# memcpy, ZeroMQ over ipc:// (where zmq_throughput is built), the four round trips, both
# processes' RSS samples, and a met/missed status for each of issue 39's targets. It checks
# that the section runs, not how fast: the figures of so short a run mean nothing.
# Usage: shm_section_test.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: shm_section_test.sh BUILD_DIR}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$(dirname "$0")/compare.sh" --build "$build" --shm-only --repeat 1 --time 100ms --iterations 200 \
    --shm-sizes 64,64KiB --memcpy-buffer 16MiB --shm-memory-time 2s --shm-memory-interval 0.2 --out "$out" \
    >"$out/stdout" 2>"$out/stderr" || { cat "$out/stderr" >&2; echo "shm_section_test: FAIL: compare.sh failed" >&2; exit 1; }
zmq=0
[ -x "$build/tools/bench/zmq_throughput" ] && zmq=1
python3 - "$out/results.json" "$zmq" <<'PY' || { cat "$out/stderr" >&2; exit 1; }
import json, sys
doc, zmq = json.load(open(sys.argv[1])), sys.argv[2] == "1"
shm = doc["shm"]
problems = [f"failed run: {run}" for run in doc["failed_runs"]]
expected = {"shm": ["64", "65536"], "tcp": ["64", "65536"], "memcpy": ["65536"]}
if zmq:
    expected["zmq_ipc"] = ["64"]
for system, sizes in expected.items():
    for size in sizes:
        point = shm["throughput"].get(system, {}).get(size)
        if not point or not point["gbps"]["median"] > 0 or not point["msgs_per_s"]["median"] > 0:
            problems.append(f"no throughput for {system} at {size} B: {point}")
for system in ("shm", "tcp", "shm_busy", "tcp_busy"):
    s = shm["rtt_us"].get(system, {}).get("8", {}).get("median")
    if not s or not s["median"] > 0:
        problems.append(f"no round trip for {system}: {s}")
memory = shm["memory"]
if memory is None:
    problems.append("no memory check over shm://")
else:
    rss = memory["rss_kib"]
    if memory["scheme"] != "shm" or len(rss["sender"]) < 6 or len(rss["sender"]) != len(rss["receiver"]) \
            or min(rss["sender"] + rss["receiver"]) <= 0:
        problems.append(f"memory check: {memory}")
    if set(memory["flat"]) < {"sender", "receiver", "baseline_samples", "slack_kib"}:
        problems.append(f"memory check without flatness: {memory['flat']}")
targets = [t for t in doc["targets"] if t["target"].startswith(("shm://", "memory: shm://"))]
names = {t["target"] for t in targets}
wanted = {"shm:// / tcp:// msg/s", "shm:// / tcp:// Gb/s", "shm:// / cold memcpy Gb/s",
          "shm:// / tcp:// busy-poll RTT median", "shm:// / tcp:// sleeping RTT median",
          "memory: shm:// sender and receiver RSS flat (memory_check.sh --scheme shm)"}
if zmq:
    wanted.add("shm:// / ZeroMQ ipc:// msg/s")
if not wanted <= names:
    problems.append(f"targets missing: {wanted - names}")
problems += [f"target not judged: {t}" for t in targets
             if t["status"] not in ("met", "missed") and (zmq or "ZeroMQ" not in t["target"])]
if problems:
    sys.exit("shm_section_test: FAIL:\n  " + "\n  ".join(problems))
PY
grep -qF "### \`shm://\` against \`tcp://\`" "$out/results.md" || { echo "shm_section_test: FAIL: no shm section in results.md" >&2; exit 1; }
echo "shm_section_test: ok"
