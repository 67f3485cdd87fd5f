#!/bin/bash
# SPDX-License-Identifier: MIT
# Start order (issue 49, item 3): netio_cat sub started 1.5 s before netio_cat pub waits for
# the publisher (--connect-timeout), is acknowledged once it is up, and prints every record
# published; netio_throughput started before its netio_recv delivers a verified stream; and a
# subscriber whose publisher never comes fails once --connect-timeout passed, naming it.
#   start_order_test.sh NETIO_CAT NETIO_RECV NETIO_THROUGHPUT TRANSPORT(tcp|shm|fabric)
set -euo pipefail
cat_tool=$1 recv=$2 send=$3 transport=$4
source "$(dirname "$0")/tool_test_lib.sh"

# A port nobody listens on now (the kernel's pick, let go again); shm:// takes any number.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- netio_cat sub first, netio_cat pub 1.5 s later ---
records=50
port=$(free_port)
publisher=$(endpoint_for "$transport" "$port")
"$cat_tool" sub -e "$publisher" --tags 7 --format raw -n "$records" --connect-timeout 30s --timeout 60s \
  >"$WORK/sub.out" 2>"$WORK/sub.err" &
sub_pid=$!
BACKGROUND_PIDS+=("$sub_pid")
sleep 1.5
kill -0 "$sub_pid" 2>/dev/null || fail "netio_cat sub gave up before its publisher started"
seq 1 "$records" | sed 's/^/record /' >"$WORK/records.txt"
"$cat_tool" pub -e "$publisher" --tag 7 --subscribers 1 --timeout 60s <"$WORK/records.txt" \
  >"$WORK/pub.out" 2>"$WORK/pub.err" || fail "netio_cat pub exited with $?"
status=0
wait "$sub_pid" || status=$?
[ "$status" -eq 0 ] || fail "netio_cat sub exited with $status"
cmp "$WORK/records.txt" "$WORK/sub.out" || fail "netio_cat sub started first did not print every record"

# --- netio_throughput first, netio_recv 1 s later ---
port=$(free_port)
receiver=$(endpoint_for "$transport" "$port")
"$send" -e "$receiver" -s 4KiB -n 2000 --connect-timeout 30s --timeout 60s >"$WORK/send.out" 2>"$WORK/send.err" &
send_pid=$!
BACKGROUND_PIDS+=("$send_pid")
sleep 1
kill -0 "$send_pid" 2>/dev/null || fail "netio_throughput gave up before its receiver started"
"$recv" -e "$receiver" --verify --json --report-interval 0 --timeout 60s >"$WORK/recv.json" 2>"$WORK/recv.err" \
  || fail "netio_recv exited with $?"
wait "$send_pid" || fail "netio_throughput exited with $?"
python3 - "$WORK/recv.json" <<'PY' || fail "netio_recv's JSON: not every message arrived intact"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
assert [r["messages"] for r in results] == [2000], results
assert all(r["lost"] == 0 and r["corrupt"] == 0 and r["duplicated"] == 0 for r in results), results
PY

# --- a publisher that never comes: the subscriber fails at --connect-timeout, naming it ---
port=$(free_port)
status=0
"$cat_tool" sub -e "$(endpoint_for "$transport" "$port")" --tags 7 --connect-timeout 500ms --timeout 30s \
  >"$WORK/never.out" 2>"$WORK/never.err" || status=$?
[ "$status" -eq 1 ] || fail "netio_cat sub without a publisher exited with $status (expected 1)"
grep -q "$(host_port_for "$transport" "$port")" "$WORK/never.err" || fail "the error does not name the publisher"
grep -q "attempt" "$WORK/never.err" || fail "the error does not count the attempts"
echo "OK: subscriber and sender started before their peers got everything; a missing publisher named"
