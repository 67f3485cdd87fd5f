#!/bin/bash
# SPDX-License-Identifier: MIT
# kill -9 of a peer mid-stream, with real processes; the survivors must notice within a
# bounded time, say what happened and exit with the documented status, nothing hangs.
# (A sender killed beside a surviving one: several_senders_test.sh.)
#   1. the receiver killed: netio_throughput fails (exit 1) naming the endpoint, promptly;
#   2. the publisher killed: netio_recv --subscribe ends (exit 1, "publisher ... disconnected");
#   3. one of two subscribers killed: the publisher carries on and ends normally (exit 0), and
#      the other subscriber gets its whole stream, verified (exit 0, nothing lost);
#   4. the receiver stopped (SIGSTOP) for 3 s mid-stream, then resumed: nothing lost, and the
#      sender's memory stays bounded meanwhile (back-pressure, not buffering).
#   fault_kill_test.sh NETIO_RECV NETIO_THROUGHPUT TRANSPORT(tcp|shm|fabric)
set -euo pipefail
recv=$1 send=$2 transport=$3
source "$(dirname "$0")/tool_test_lib.sh"

# Waits up to 20 s for a line matching PATTERN in FILE.
wait_for_line() {  # FILE PATTERN WHAT
  for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  fail "no sign of $3 after 20 s"
}
# Waits up to SECONDS for PID to exit; sets $status to its exit status.
wait_exit() {  # PID SECONDS WHAT
  for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$1" 2>/dev/null; then fail "$3 still running $2 s after its peer was killed"; fi
  status=0
  wait "$1" || status=$?
}

# 1. The receiver killed.
"$recv" -e "$(endpoint_for "$transport" 0)" --report-interval 200ms --port-file "$WORK/port1" --timeout 60s \
  >"$WORK/recv1.out" 2>"$WORK/recv1.err" &
recv_pid=$!
BACKGROUND_PIDS+=("$recv_pid")
port=$(wait_for_port_file "$WORK/port1" "$recv_pid")
"$send" -e "$(endpoint_for "$transport" "$port")" -s 4KiB -t 30s --timeout 60s >"$WORK/send1.out" 2>"$WORK/send1.err" &
send_pid=$!
BACKGROUND_PIDS+=("$send_pid")
wait_for_line "$WORK/recv1.err" "Gb/s" "traffic"
kill -KILL "$recv_pid"
wait_exit "$send_pid" 20 "netio_throughput"
[ "$status" -eq 1 ] || fail "netio_throughput exited with $status after its receiver was killed, not 1"
grep -q "$(host_port_for "$transport" "$port")" "$WORK/send1.err" || fail "netio_throughput's error does not name the endpoint: $(cat "$WORK/send1.err")"

# 2. The publisher killed.
"$send" --publish -e "$(endpoint_for "$transport" 0)" --tags 1 --subscribers 1 -s 1KiB -t 30s \
  --port-file "$WORK/port2" --timeout 60s >"$WORK/pub2.out" 2>"$WORK/pub2.err" &
pub_pid=$!
BACKGROUND_PIDS+=("$pub_pid")
port=$(wait_for_port_file "$WORK/port2" "$pub_pid")
"$recv" --subscribe -e "$(endpoint_for "$transport" "$port")" --tags 1 --report-interval 200ms --timeout 60s \
  >"$WORK/sub2.out" 2>"$WORK/sub2.err" &
sub_pid=$!
BACKGROUND_PIDS+=("$sub_pid")
wait_for_line "$WORK/sub2.err" "Gb/s" "traffic to the subscriber"
kill -KILL "$pub_pid"
wait_exit "$sub_pid" 20 "netio_recv --subscribe"
[ "$status" -eq 1 ] || fail "netio_recv --subscribe exited with $status after its publisher was killed, not 1"
grep -q "publisher disconnected" "$WORK/sub2.err" || fail "the subscriber did not say its publisher went away"

# 3. One of two subscribers killed.
"$send" --publish -e "$(endpoint_for "$transport" 0)" --tags 1,2 --subscribers 2 -s 64,4KiB -t 3s --verify \
  --port-file "$WORK/port3" --timeout 60s >"$WORK/pub3.out" 2>"$WORK/pub3.err" &
pub_pid=$!
BACKGROUND_PIDS+=("$pub_pid")
port=$(wait_for_port_file "$WORK/port3" "$pub_pid")
publisher=$(endpoint_for "$transport" "$port")
"$recv" --subscribe -e "$publisher" --tags 2 --report-interval 200ms --timeout 60s >"$WORK/victim.out" 2>"$WORK/victim.err" &
victim=$!
BACKGROUND_PIDS+=("$victim")
"$recv" --subscribe -e "$publisher" --tags 1 --verify --json --report-interval 0 --timeout 60s \
  >"$WORK/survivor.json" 2>"$WORK/survivor.err" &
survivor=$!
BACKGROUND_PIDS+=("$survivor")
wait_for_line "$WORK/victim.err" "Gb/s" "traffic to the subscriber to be killed"
kill -KILL "$victim"
wait_exit "$pub_pid" 50 "the publisher"
[ "$status" -eq 0 ] || fail "the publisher exited with $status after a subscriber was killed, not 0"
wait_exit "$survivor" 20 "the surviving subscriber"
[ "$status" -eq 0 ] || fail "the surviving subscriber exited with $status, not 0"
python3 - "$WORK/survivor.json" <<'PY' || fail "the surviving subscriber's stream is not whole"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
assert [r["size"] for r in results] == [64, 4096], results
for r in results:
    assert r["messages"] > 0, r
    assert (r["lost"], r["duplicated"], r["corrupt"]) == (0, 0, 0), r
PY
# 4. The receiver stalls for 3 s and resumes.
"$recv" -e "$(endpoint_for "$transport" 0)" --verify --json --report-interval 200ms --port-file "$WORK/port4" --timeout 60s \
  >"$WORK/recv4.json" 2>"$WORK/recv4.err" &
recv_pid=$!
BACKGROUND_PIDS+=("$recv_pid")
port=$(wait_for_port_file "$WORK/port4" "$recv_pid")
"$send" -e "$(endpoint_for "$transport" "$port")" -s 4KiB -t 5s --timeout 60s >"$WORK/send4.out" 2>"$WORK/send4.err" &
send_pid=$!
BACKGROUND_PIDS+=("$send_pid")
wait_for_line "$WORK/recv4.err" "Gb/s" "traffic"
kill -STOP "$recv_pid"
sleep 3
sender_rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$send_pid/status")
kill -CONT "$recv_pid"
wait_exit "$send_pid" 30 "the sender"
[ "$status" -eq 0 ] || fail "the sender exited with $status after its receiver stalled, not 0"
wait_exit "$recv_pid" 30 "the receiver"
[ "$status" -eq 0 ] || fail "the receiver exited with $status after stalling, not 0"
python3 - "$WORK/recv4.json" <<'PY' || fail "the stalled receiver's stream is not whole"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
assert len(results) == 1 and results[0]["messages"] > 0, results
assert (results[0]["lost"], results[0]["duplicated"], results[0]["corrupt"]) == (0, 0, 0), results
PY
# The sender's pool is 16 pages of 1 MiB by default: 512 MiB leaves room for the sanitizers'
# own memory, and is far below what 3 s of buffering at loopback speed would take.
[ "$sender_rss" -lt $((512 * 1024)) ] || fail "the sender grew to $sender_rss KiB while its receiver stalled"
echo "stalled receiver: the sender's RSS after 3 s of stall was $sender_rss KiB"
echo "ok: kill -9 of receiver, publisher, subscriber; a stalled receiver; over $transport"
