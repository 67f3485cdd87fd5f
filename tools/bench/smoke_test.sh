#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CTest smoke test of the benchmark suite (label "bench"): runs every reference program of
# tools/bench once, briefly, on 127.0.0.1 (ephemeral ports), and checks that the reporting
# side prints one JSON document with the expected keys. Usage: smoke_test.sh BIN_DIR
set -euo pipefail
bin="${1:?usage: smoke_test.sh DIR_OF_THE_BENCH_PROGRAMS}"
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source "$(dirname "$0")/../../scripts/lib/bench_common.sh"
scratch="$(mktemp -d)"
server_pid=""
trap 'bench_cleanup "$scratch" "$server_pid"' EXIT

fail() { echo "smoke_test: FAIL: $*" >&2; for f in "$scratch"/*.err; do [ -s "$f" ] && cat "$f" >&2; done; exit 1; }

start_server() {  # command...: started in the background with --port-file, waits for the port
  rm -f "$scratch/port"
  "$@" --port-file "$scratch/port" >"$scratch/server.out" 2>"$scratch/server.err" &
  server_pid=$!
  bench_wait_for_port "$scratch/port" || fail "$1 did not start listening"
}

stop_server() { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

check_json() {  # file kind(tput|rtt) program
  python3 - "$1" "$2" <<'PY' || fail "$3: bad JSON: $(cat "$1")"
import json, sys
doc = json.load(open(sys.argv[1]))
if sys.argv[2] == "tput":
    r = doc["results"][0]
    assert r["messages"] > 0 and r["bytes"] > 0 and r["gbps"] > 0 and r["msgs_per_s"] > 0, r
else:
    s = doc["rtt_us"]
    assert doc["iterations"] > 0 and 0 < s["min"] <= s["median"] <= s["p99"] <= s["max"], s
PY
  echo "smoke_test: ok: $3"
}

for p in tcp_throughput tcp_pingpong fi_oneway_pingpong alternating_pingpong subscribe_time cold_memcpy spin_gaps \
         shm_wakeup_flood; do
  "$bin/$p" --help >/dev/null || fail "$p --help"
done

# the cold memcpy reference: two passes over small buffers (cold only when large; not here)
"$bin/cold_memcpy" -s 64KiB --buffer-size 4MiB -n 2 --json >"$scratch/client.out" 2>"$scratch/client.err" \
  || fail "cold_memcpy"
check_json "$scratch/client.out" tput cold_memcpy
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["passes"] == 2 and
  d["results"][0]["bytes"] == 2 * d["buffer_bytes"] == 2 * 4 * 2**20 and d["results"][0]["messages"] == 128))' \
  "$scratch/client.out" || fail "cold_memcpy: not 2 passes of 64 calls: $(cat "$scratch/client.out")"

# raw TCP throughput: the receiver reports; --paged (netio's sender shape) must deliver every
# byte too, also with messages that span its pages (1 MiB, or --page-size)
for mode in "-s 1KiB" "-s 1KiB --paged" "-s 3MiB --paged" "-s 100KiB --paged --page-size 64KiB"; do
  size="${mode#-s }"; size="${size%% *}"
  start_server "$bin/tcp_throughput" --recv -s "$size" --json --timeout 20s
  "$bin/tcp_throughput" -e "tcp://127.0.0.1:$(cat "$scratch/port")" $mode -n 20 --timeout 20s 2>"$scratch/client.err" \
    || fail "tcp_throughput sender ($mode)"
  wait "$server_pid" || fail "tcp_throughput receiver ($mode)"; server_pid=""
  check_json "$scratch/server.out" tput "tcp_throughput $mode"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; sys.exit(r["messages"] != 20)' \
    "$scratch/server.out" || fail "tcp_throughput $mode: not 20 messages: $(cat "$scratch/server.out")"
done

for mode in "" --busy-poll --one-way "--one-way --busy-poll"; do
  start_server "$bin/tcp_pingpong" --server $mode --timeout 20s
  "$bin/tcp_pingpong" -e "tcp://127.0.0.1:$(cat "$scratch/port")" $mode -s 8 -n 200 -w 20 --json --timeout 20s \
    >"$scratch/client.out" 2>"$scratch/client.err" || fail "tcp_pingpong $mode"
  stop_server
  check_json "$scratch/client.out" rtt "tcp_pingpong $mode"
done

# netio and raw TCP in alternating chunks between one client and one server: every chunk pair
# gives a ratio, both systems' samples are all there, and the server ends with the client
for mode in "" --busy-poll --raw-epoll; do
  for size in 8 3000; do
    start_server "$bin/alternating_pingpong" --server $mode --timeout 20s
    "$bin/alternating_pingpong" -e "tcp://127.0.0.1:$(cat "$scratch/port")" $mode -s "$size" --chunks 3 -n 40 -w 5 \
      --json --timeout 20s >"$scratch/client.out" 2>"$scratch/client.err" || fail "alternating_pingpong $mode -s $size"
    wait "$server_pid" || fail "alternating_pingpong --server $mode (after -s $size)"; server_pid=""
    python3 - "$scratch/client.out" <<'PY' || fail "alternating_pingpong $mode -s $size: bad JSON: $(cat "$scratch/client.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["chunks"] == 3 and doc["per_chunk"] == 40, doc
for system in ("netio", "tcp"):
    s = doc[system]["rtt_us"]
    assert doc[system]["iterations"] == 120 and 0 < s["min"] <= s["median"] <= s["max"], doc[system]
r = doc["ratio"]
assert len(r["pairs"]) == 3 and r["min"] <= r["median"] <= r["max"] and r["min"] > 0, r
PY
    echo "smoke_test: ok: alternating_pingpong $mode -s $size"
  done
done

# libfabric's tcp provider directly (FI_EP_MSG, spinning on the CQs): one connection, then
# netio's shape of two connections carrying data one way each
for mode in "" --one-way; do
  start_server "$bin/fi_oneway_pingpong" --server $mode --timeout 20s
  "$bin/fi_oneway_pingpong" -e "tcp://127.0.0.1:$(cat "$scratch/port")" $mode -s 8 -n 200 -w 20 --json --timeout 20s \
    >"$scratch/client.out" 2>"$scratch/client.err" || fail "fi_oneway_pingpong $mode"
  stop_server
  check_json "$scratch/client.out" rtt "fi_oneway_pingpong $mode"
done

# the publisher's time to take subscriptions: two subscribers of 600 tags each (3 requests)
"$bin/subscribe_time" --tags 600 --subscribers 2 --json >"$scratch/client.out" 2>"$scratch/client.err" \
  || fail "subscribe_time"
python3 - "$scratch/client.out" <<'PY' || fail "subscribe_time: bad JSON: $(cat "$scratch/client.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["routes"] == 1200 and len(doc["seconds"]) == 2 and all(s > 0 for s in doc["seconds"]), doc
PY
echo "smoke_test: ok: subscribe_time"

if [ ! -x "$bin/zmq_throughput" ]; then
  echo "smoke_test: ZeroMQ programs not built (no libzmq): skipped"
  exit 0
fi
for p in zmq_throughput zmq_pubsub zmq_reqrep; do "$bin/$p" --help >/dev/null || fail "$p --help"; done

start_server "$bin/zmq_throughput" --recv --json --timeout 20s
"$bin/zmq_throughput" -e "tcp://127.0.0.1:$(cat "$scratch/port")" -s 64 -n 10000 --timeout 20s 2>"$scratch/client.err" \
  || fail "zmq_throughput sender"
wait "$server_pid" || fail "zmq_throughput receiver"; server_pid=""
check_json "$scratch/server.out" tput zmq_throughput

# over ipc:// (an abstract socket: --bind), every message delivered before the sender closes
start_server "$bin/zmq_throughput" --recv --bind "ipc://@netio-bench-smoke-$$" --json --timeout 20s
"$bin/zmq_throughput" -e "ipc://@netio-bench-smoke-$$" -s 8 -n 20000 --timeout 20s 2>"$scratch/client.err" \
  || fail "zmq_throughput sender (ipc://)"
wait "$server_pid" || fail "zmq_throughput receiver (ipc://)"; server_pid=""
check_json "$scratch/server.out" tput "zmq_throughput ipc://"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; sys.exit(r["messages"] != 20000)' \
  "$scratch/server.out" || fail "zmq_throughput ipc://: not 20000 messages: $(cat "$scratch/server.out")"

start_server "$bin/zmq_pubsub" --publish -s 64 -n 10000 --timeout 20s
"$bin/zmq_pubsub" -e "tcp://127.0.0.1:$(cat "$scratch/port")" --json --timeout 20s \
  >"$scratch/client.out" 2>"$scratch/client.err" || fail "zmq_pubsub subscriber"
wait "$server_pid" || fail "zmq_pubsub publisher"; server_pid=""
check_json "$scratch/client.out" tput zmq_pubsub

start_server "$bin/zmq_reqrep" --server --timeout 20s
"$bin/zmq_reqrep" -e "tcp://127.0.0.1:$(cat "$scratch/port")" -s 8 -n 200 -w 20 --json --timeout 20s \
  >"$scratch/client.out" 2>"$scratch/client.err" || fail "zmq_reqrep client"
stop_server
check_json "$scratch/client.out" rtt zmq_reqrep
"$bin/spin_gaps" -t 100ms --json >"$scratch/gaps.json" 2>"$scratch/gaps.err" || fail "spin_gaps"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["cpus"] and d["seconds"] > 0))' \
  "$scratch/gaps.json" || fail "spin_gaps: bad JSON: $(cat "$scratch/gaps.json")"
echo "smoke_test: ok: spin_gaps"

# A wake-up flooder against netio_recv over shm://: dropped after its first bytes, logged.
start_server "$bin/../netio_recv" -e "shm://netio-bench-smoke-$$:0" --report-interval 0 --timeout 20s
"$bin/shm_wakeup_flood" -e "shm://netio-bench-smoke-$$:$(cat "$scratch/port")" --once -t 5s --json \
  >"$scratch/flood.json" 2>"$scratch/flood.err" || fail "shm_wakeup_flood"
stop_server
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["connections"] == 1 and d["dropped"] == 1))' \
  "$scratch/flood.json" || fail "shm_wakeup_flood: not dropped once: $(cat "$scratch/flood.json")"
grep -q "wake-up flood" "$scratch/server.err" || fail "netio_recv did not log the wake-up flood"
echo "smoke_test: ok: shm_wakeup_flood"
echo "smoke_test: all passed"
