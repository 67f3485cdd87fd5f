#!/bin/bash
# SPDX-License-Identifier: MIT
# netio_throughput → netio_recv over loopback: a bounded sweep with --verify on both sides;
# every message must arrive, once, intact, and both JSON documents must have the contract's
# keys (tools/README.md).
#   throughput_pair_test.sh NETIO_RECV NETIO_THROUGHPUT TRANSPORT(tcp|shm|fabric) MODE(ht|ll) CHECKER
set -euo pipefail
recv=$1 send=$2 transport=$3 mode=$4 checker=$5
source "$(dirname "$0")/tool_test_lib.sh"

"$recv" -e "$(endpoint_for "$transport" 0)" --mode "$mode" --verify --json --report-interval 0 \
  --port-file "$WORK/port" --timeout 60s >"$WORK/recv.json" 2>"$WORK/recv.err" &
recv_pid=$!
BACKGROUND_PIDS+=("$recv_pid")
port=$(wait_for_port_file "$WORK/port" "$recv_pid")

"$send" -e "$(endpoint_for "$transport" "$port")" --mode "$mode" --sweep -n 300 --verify --json \
  --timeout 60s >"$WORK/send.json" 2>"$WORK/send.err" || fail "netio_throughput exited with $?"
recv_status=0
wait "$recv_pid" || recv_status=$?
[ "$recv_status" -eq 0 ] || fail "netio_recv exited with $recv_status"

python3 "$checker" throughput "$WORK/send.json" "$WORK/recv.json" 300 || fail "JSON check failed"
echo "ok: $transport $mode"
