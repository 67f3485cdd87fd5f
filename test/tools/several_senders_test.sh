#!/bin/bash
# SPDX-License-Identifier: MIT
# netio_recv trusts no stranger: one stream per connection.
#   1. Strangers first: a raw TCP connection that closes at once, and one that sends junk
#      and closes; neither ends nor fails the run.
#   2. Two netio_throughput at once into netio_recv --senders 2 --verify: each stream is
#      verified on its own (their sequence numbers overlap), the first end of stream does
#      not end the run, and the JSON sums both (2 × N per size, nothing lost).
#   3. Two senders, one killed (-9) mid-stream: the survivor completes, its stream is
#      verified intact, and netio_recv reports the cut stream (exit 1) instead of hanging.
#   several_senders_test.sh NETIO_RECV NETIO_THROUGHPUT TRANSPORT(tcp|shm|fabric) MODE(ht|ll)
set -euo pipefail
recv=$1 send=$2 transport=$3 mode=$4
source "$(dirname "$0")/tool_test_lib.sh"

per_size=3000
"$recv" -e "$(endpoint_for "$transport" 0)" --mode "$mode" --senders 2 --verify --json --report-interval 0 \
  --port-file "$WORK/port" --timeout 60s >"$WORK/recv.json" 2>"$WORK/recv.err" &
recv_pid=$!
BACKGROUND_PIDS+=("$recv_pid")
port=$(wait_for_port_file "$WORK/port" "$recv_pid")
receiver=$(endpoint_for "$transport" "$port")

# 1. Strangers: connect and leave; connect, write junk, leave.
python3 - "$transport" "$port" <<'PY'
import socket, sys, time
transport, port = sys.argv[1], int(sys.argv[2])
def connect():
    if transport != "shm":
        return socket.create_connection(("127.0.0.1", port), timeout=5)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(f"\0netio-shm/netio-tools:{port}")  # the abstract name of shm://netio-tools:PORT
    return s
connect().close()
s = connect()
s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 4)
time.sleep(0.2)
s.close()
PY
sleep 1.5  # longer than netio_recv's grace for vanished senders
kill -0 "$recv_pid" 2>/dev/null || fail "netio_recv ended after strangers connected and left"

# 2. Two senders at once.
senders=()
for i in 1 2; do
  "$send" -e "$receiver" --mode "$mode" -s 64,4KiB -n "$per_size" --verify --json --timeout 60s \
    >"$WORK/send-$i.json" 2>"$WORK/send-$i.err" &
  senders+=($!)
done
for i in "${!senders[@]}"; do
  wait "${senders[$i]}" || fail "sender $((i + 1)) exited with $?"
done
recv_status=0
wait "$recv_pid" || recv_status=$?
[ "$recv_status" -eq 0 ] || fail "netio_recv --senders 2 exited with $recv_status"
python3 - "$WORK/recv.json" "$per_size" <<'PY' || fail "JSON check failed for two senders"
import json, sys
doc = json.load(open(sys.argv[1]))
per = int(sys.argv[2])
assert set(doc) == {"results"}, doc
results = doc["results"]
assert [r["size"] for r in results] == [64, 4096], results
for r in results:
    assert r["messages"] == 2 * per, r
    assert r["bytes"] == 2 * per * r["size"], r
    assert (r["lost"], r["duplicated"], r["corrupt"]) == (0, 0, 0), r
PY

# 3. One of two senders killed mid-stream.
"$recv" -e "$(endpoint_for "$transport" 0)" --mode "$mode" --senders 2 --verify --report-interval 200ms \
  --port-file "$WORK/port3" --timeout 60s >"$WORK/recv3.out" 2>"$WORK/recv3.err" &
recv_pid=$!
BACKGROUND_PIDS+=("$recv_pid")
port=$(wait_for_port_file "$WORK/port3" "$recv_pid")
receiver=$(endpoint_for "$transport" "$port")
"$send" -e "$receiver" --mode "$mode" -s 1KiB -t 30s --timeout 60s >"$WORK/victim.out" 2>"$WORK/victim.err" &
victim=$!
BACKGROUND_PIDS+=("$victim")
# The victim's stream has begun once netio_recv reports traffic (it is alone so far).
for _ in $(seq 200); do grep -q "Gb/s" "$WORK/recv3.err" && break; sleep 0.1; done
grep -q "Gb/s" "$WORK/recv3.err" || fail "the victim's stream did not begin within 20 s"
"$send" -e "$receiver" --mode "$mode" -s 64,4KiB -n "$per_size" --verify --timeout 60s \
  >"$WORK/survivor.out" 2>"$WORK/survivor.err" &
survivor=$!
BACKGROUND_PIDS+=("$survivor")
sleep 0.5
kill -KILL "$victim"
wait "$victim" 2>/dev/null || true
wait "$survivor" || fail "the surviving sender exited with $?"
recv_status=0
wait "$recv_pid" || recv_status=$?
[ "$recv_status" -eq 1 ] || fail "netio_recv exited with $recv_status after a sender was killed, not 1"
grep -q "disconnected without ending its stream" "$WORK/recv3.err" || fail "netio_recv did not report the cut stream"
# The survivor's stream: both runs complete, nothing lost (its own table, not marked cut).
python3 - "$WORK/recv3.out" "$per_size" <<'PY' || fail "the survivor's stream is not intact"
import re, sys
text = open(sys.argv[1]).read()
per = sys.argv[2]
blocks = [b.split("\nall ")[0] for b in re.split(r"^from ", text, flags=re.M)[1:]]
intact = [b for b in blocks if "(stream not ended)" not in b.splitlines()[0]]
assert len(intact) == 1, text
rows = [l for l in intact[0].splitlines() if re.match(r"^\s*(64 B|4 KiB)\s", l)]
assert len(rows) == 2, intact[0]
for row in rows:
    cells = row.split()
    assert per in cells, row
    assert cells[-3:] == ["0", "0", "0"], row  # lost, duplicated, corrupt
PY
echo "ok: several senders, $transport $mode"
