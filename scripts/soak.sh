#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak test (not part of the default suite): one netio_recv --verify for a long time while
#   - a steady netio_throughput streams into it for the whole run,
#   - short-lived senders come and go (a verified stream each, one every CHURN seconds,
#     every third one killed with -9 mid-stream),
#   - hostile clients connect all the time (junk bytes, silent connections held for
#     seconds, connect-and-close bursts).
# Every SAMPLE seconds it records netio_recv's RSS and open descriptors; at the end it prints
# them, the messages lost / duplicated / corrupt over the surviving streams (must be 0) and
# the receiver's exit status. Release build in build/release unless --build says otherwise.
#   scripts/soak.sh [--seconds N (600)] [--transport tcp|fabric] [--mode ht|ll] [--churn N (5)]
#                   [--sample N (10)] [--build DIR] [--csv FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=SCRIPTDIR/lib/bench_common.sh
source scripts/lib/bench_common.sh

seconds=600 transport=tcp mode=ht churn=5 sample=10 build=build/release csv=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --transport) transport="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --churn) churn="$2"; shift 2 ;;
    --sample) sample="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --csv) csv="$2"; shift 2 ;;
    -h|--help) sed -n '3,14p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$seconds" "$churn" "$sample"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: '$n' is not a positive whole number of seconds" >&2; exit 2; }
done
case "$transport" in tcp|fabric) ;; *) echo "soak.sh: --transport is tcp or fabric" >&2; exit 2 ;; esac

if [ ! -x "$build/tools/netio_recv" ]; then
  scripts/install-deps.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DNETIO_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target netio_recv netio_throughput >/dev/null
fi
recv="$build/tools/netio_recv"
send="$build/tools/netio_throughput"
export FI_SOCKETS_PE_WAITTIME=0 NETIO_LOG="${NETIO_LOG:-error}"

work=$(mktemp -d)
pids=()
trap 'bench_cleanup --wait "$work" "${pids[@]}"' EXIT

comers=$((seconds / churn - 1))
[ "$comers" -ge 0 ] || comers=0
streams=$((1 + comers))
"$recv" -e "$(bench_endpoint "$transport" 0)" --mode "$mode" --senders "$streams" --verify --json \
  --report-interval 0 --port-file "$work/port" --timeout "$((seconds + 120))s" >"$work/recv.json" 2>"$work/recv.err" &
recv_pid=$!
pids+=("$recv_pid")
port=$(bench_wait_for_port --print "$work/port" "soak.sh: netio_recv did not start listening")
target=$(bench_endpoint "$transport" "$port")
echo "soak: $seconds s into $target ($mode mode), a steady sender, $comers senders coming and going, hostile clients" >&2

"$send" -e "$target" --mode "$mode" -s 4KiB -t "${seconds}s" --timeout "$((seconds + 60))s" \
  >"$work/steady.out" 2>"$work/steady.err" &
steady_pid=$!
pids+=("$steady_pid")

# Hostile clients, until told to stop.
python3 - "$port" "$work/hostile.stop" >"$work/hostile.out" 2>&1 <<'PY' &
import os, random, socket, sys, time
port, stop = int(sys.argv[1]), sys.argv[2]
held, counts = [], {"junk": 0, "silent": 0, "burst": 0, "refused": 0}
while not os.path.exists(stop):
    try:
        kind = random.choice(["junk", "silent", "burst"])
        if kind == "junk":
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(os.urandom(random.randint(1, 4096)))
            s.close()
        elif kind == "silent":
            held.append((time.time() + random.uniform(1, 5), socket.create_connection(("127.0.0.1", port), timeout=2)))
        else:
            for _ in range(20):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
        counts[kind] += 1
    except OSError:
        counts["refused"] += 1
    now = time.time()
    for entry in [e for e in held if e[0] < now]:
        entry[1].close()
        held.remove(entry)
    time.sleep(0.2)
for _, s in held:
    s.close()
print(" ".join(f"{k}={v}" for k, v in counts.items()))
PY
hostile_pid=$!
pids+=("$hostile_pid")

# Samples of the receiver's memory and descriptors.
(
  echo "seconds,rss_kib,fds"
  start=$SECONDS
  while kill -0 "$recv_pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$recv_pid/status" 2>/dev/null || echo "")
    fds=$(ls "/proc/$recv_pid/fd" 2>/dev/null | wc -l)
    [ -n "$rss" ] && echo "$((SECONDS - start)),$rss,$fds"
    sleep "$sample"
  done
) >"$work/samples.csv" &
pids+=($!)

# Senders coming and going: a verified stream each; every third one killed mid-stream.
killed=0
for i in $(seq "$comers"); do
  sleep "$churn"
  if [ $((i % 3)) -eq 0 ]; then
    "$send" -e "$target" --mode "$mode" -s 1KiB -t 30s --timeout 60s >/dev/null 2>&1 &
    victim=$!
    sleep 1
    kill -KILL "$victim" 2>/dev/null || true
    wait "$victim" 2>/dev/null || true
    killed=$((killed + 1))
  else
    "$send" -e "$target" --mode "$mode" -s 64,64KiB -n 20000 --timeout 60s >>"$work/comers.out" 2>>"$work/comers.err" \
      || echo "soak: sender $i exited with $?" >&2
  fi
done

steady_status=0
wait "$steady_pid" || steady_status=$?
touch "$work/hostile.stop"
wait "$hostile_pid" || true
recv_status=0
wait "$recv_pid" || recv_status=$?
sleep 0.1

echo "--- netio_recv RSS and descriptors (every $sample s)"
tr , "\t" <"$work/samples.csv"
[ -n "$csv" ] && cp "$work/samples.csv" "$csv"
python3 - "$work/recv.json" "$work/samples.csv" <<'PY'
import csv, json, sys
doc = json.load(open(sys.argv[1]))
lost = sum(r["lost"] or 0 for r in doc["results"])
dup = sum(r["duplicated"] or 0 for r in doc["results"])
corrupt = sum(r["corrupt"] or 0 for r in doc["results"])
messages = sum(r["messages"] for r in doc["results"])
rows = list(csv.DictReader(open(sys.argv[2])))
rss = [int(r["rss_kib"]) for r in rows]
fds = [int(r["fds"]) for r in rows]
print(f"messages received: {messages}, lost: {lost}, duplicated: {dup}, corrupt: {corrupt}")
if rss:
    print(f"RSS: first {rss[0]} KiB, last {rss[-1]} KiB, max {max(rss)} KiB; fds: first {fds[0]}, last {fds[-1]}, max {max(fds)}")
PY
echo "hostile clients: $(cat "$work/hostile.out")"
echo "senders killed mid-stream: $killed (their streams are cut; netio_recv exits 1 for them)"
echo "steady sender exit: $steady_status; netio_recv exit: $recv_status"
grep -v "^$" "$work/recv.err" | tail -5 >&2 || true
[ "$steady_status" -eq 0 ] || exit 1
expected=$([ "$killed" -gt 0 ] && echo 1 || echo 0)
[ "$recv_status" -eq "$expected" ] || exit 1
