#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the tools' JSON output against the contract of tools/README.md.

  check_tool_json.py throughput SENDER_JSON RECEIVER_JSON MESSAGES_PER_SIZE
  check_tool_json.py pingpong CLIENT_JSON ITERATIONS
"""
import json
import sys

RESULT_KEYS = {"size", "messages", "bytes", "seconds", "msgs_per_s", "gbps"}
VERIFY_KEYS = {"lost", "duplicated", "corrupt"}
RTT_KEYS = {"min", "median", "mean", "p90", "p99", "p999", "max", "stddev"}


def load(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)  # one document, nothing else on stdout
    except json.JSONDecodeError as e:
        sys.exit(f"{path}: not one JSON document ({e}): {text[:300]!r}")


def check_throughput(sender_path, receiver_path, per_size):
    sent = load(sender_path)
    received = load(receiver_path)
    errors = []
    if set(sent) != {"results"} or set(received) != {"results"}:
        errors.append(f"top-level keys: sender {sorted(sent)}, receiver {sorted(received)}")
    sent, received = sent.get("results", []), received.get("results", [])
    if len(sent) == 0 or len(sent) != len(received):
        errors.append(f"{len(sent)} runs sent, {len(received)} received")
    for s, r in zip(sent, received):
        if set(s) != RESULT_KEYS:
            errors.append(f"sender keys {sorted(s)}")
        if set(r) != RESULT_KEYS | VERIFY_KEYS:
            errors.append(f"receiver keys {sorted(r)}")
        size = s.get("size")
        if r.get("size") != size:
            errors.append(f"size {size} sent, {r.get('size')} received")
        if s.get("messages") != per_size or r.get("messages") != per_size:
            errors.append(f"size {size}: {s.get('messages')} sent, {r.get('messages')} received, {per_size} expected")
        if r.get("bytes") != per_size * size:
            errors.append(f"size {size}: {r.get('bytes')} bytes received")
        for key in VERIFY_KEYS:
            if r.get(key) != 0:
                errors.append(f"size {size}: {key} = {r.get(key)}")
        for doc in (s, r):
            if not (doc.get("seconds", 0) > 0 and doc.get("msgs_per_s", 0) > 0 and doc.get("gbps", 0) > 0):
                errors.append(f"size {size}: rates not positive: {doc}")
    return errors


def check_pingpong(path, iterations):
    doc = load(path)
    errors = []
    if set(doc) != {"size", "iterations", "rtt_us"}:
        errors.append(f"keys {sorted(doc)}")
    if doc.get("iterations") != iterations:
        errors.append(f"iterations {doc.get('iterations')}, expected {iterations}")
    rtt = doc.get("rtt_us", {})
    if set(rtt) != RTT_KEYS:
        errors.append(f"rtt_us keys {sorted(rtt)}")
    elif not all(isinstance(rtt[k], (int, float)) for k in RTT_KEYS):
        errors.append(f"rtt_us values not numbers: {rtt}")
    elif not (0 < rtt["min"] <= rtt["median"] <= rtt["p90"] <= rtt["p99"] <= rtt["p999"] <= rtt["max"]
              and rtt["min"] <= rtt["mean"] <= rtt["max"] and rtt["stddev"] >= 0):
        errors.append(f"rtt_us values out of order: {rtt}")
    return errors


def main(argv):
    if len(argv) == 5 and argv[1] == "throughput":
        errors = check_throughput(argv[2], argv[3], int(argv[4]))
    elif len(argv) == 4 and argv[1] == "pingpong":
        errors = check_pingpong(argv[2], int(argv[3]))
    else:
        sys.exit(__doc__)
    for error in errors:
        print(f"check_tool_json: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
