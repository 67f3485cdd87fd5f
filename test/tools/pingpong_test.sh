#!/bin/bash
# SPDX-License-Identifier: MIT
# netio_pingpong: one server, several clients one after another (JSON, text, histogram),
# then three at once (pongs as replies, and on a second connection), then SIGTERM stops the
# server cleanly and a client still pinging fails at once, naming it. The server serves its
# metrics (--metrics): the pings it received are counted there.
#   pingpong_test.sh NETIO_PINGPONG TRANSPORT(tcp|shm|fabric) CHECKER
set -euo pipefail
pingpong=$1 transport=$2 checker=$3
source "$(dirname "$0")/tool_test_lib.sh"

"$pingpong" --server -e "$(endpoint_for "$transport" 0)" --port-file "$WORK/port" --timeout 90s --metrics 127.0.0.1:0 \
  >"$WORK/server.out" 2>"$WORK/server.err" &
server_pid=$!
BACKGROUND_PIDS+=("$server_pid")
port=$(wait_for_port_file "$WORK/port" "$server_pid")
server=$(endpoint_for "$transport" "$port")

for size in 1 64 64KiB; do
  "$pingpong" -e "$server" -s "$size" -n 200 -w 20 --json --timeout 30s >"$WORK/client-$size.json" \
    2>"$WORK/client-$size.err" || fail "client with -s $size exited with $?"
  python3 "$checker" pingpong "$WORK/client-$size.json" 200 || fail "JSON check failed for -s $size"
done
# A busy-polling client (on libfabric: completion queues read every round, no wait fds).
"$pingpong" -e "$server" --busy-poll -s 8 -n 200 -w 20 --json --timeout 30s >"$WORK/client-busy.json" \
  2>"$WORK/client-busy.err" || fail "busy-polling client exited with $?"
python3 "$checker" pingpong "$WORK/client-busy.json" 200 || fail "JSON check failed for --busy-poll"
"$pingpong" -e "$server" -n 100 -w 10 --histogram --timeout 30s >"$WORK/client-text.out" 2>"$WORK/client-text.err" \
  || fail "text client exited with $?"
grep -q "median" "$WORK/client-text.out" || fail "no statistics table in the text output"
grep -q " us |" "$WORK/client-text.out" || fail "no histogram in the text output"

# The server's metrics: its receive socket counted the pings so far (4 clients of 220, one of 110).
url=$(sed -n 's/^metrics: //p' "$WORK/server.err" | head -1)
[ -n "$url" ] || fail "the server printed no metrics URL: $(cat "$WORK/server.err")"
python3 - "$url" <<'PY' || fail "the server's metrics do not count the pings"
import re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
counts = [float(m.group(1)) for m in re.finditer(r'^netio_socket_messages_total\{[^}]*\} (\S+)$', text, re.M)]
sys.exit(0 if counts and max(counts) >= 4 * 220 + 110 else 1)
PY

# Three clients at the same time: the server answers each on its own connection.
concurrent=()
for shape in one two one; do
  extra=()
  [ "$shape" = two ] && extra=(--two-connections)
  "$pingpong" -e "$server" -s 64 -n 2000 -w 20 --json --timeout 30s "${extra[@]}" \
    >"$WORK/client-$shape-${#concurrent[@]}.json" 2>"$WORK/client-$shape-${#concurrent[@]}.err" &
  concurrent+=($!)
done
for i in "${!concurrent[@]}"; do
  wait "${concurrent[$i]}" || fail "concurrent client $i exited with $?"
done
for f in "$WORK"/client-one-*.json "$WORK"/client-two-*.json; do
  python3 "$checker" pingpong "$f" 2000 || fail "JSON check failed for $(basename "$f")"
done

# A client still pinging when the server stops fails at once, naming the server.
"$pingpong" -e "$server" -n 1000000000 --timeout 60s >"$WORK/client-orphan.out" 2>"$WORK/client-orphan.err" &
orphan_pid=$!
# Stopped once the server has welcomed it (its ninth client): before, the client fails in
# its handshake, with the back-end's error instead of the pinging client's.
for _ in $(seq 300); do
  [ "$(grep -c "netio_pingpong: client .* connected" "$WORK/server.err" || true)" -ge 9 ] && break
  sleep 0.1
done
sleep 0.2
kill -TERM "$server_pid"
server_status=0
wait "$server_pid" || server_status=$?
[ "$server_status" -eq 0 ] || fail "the server exited with $server_status after SIGTERM"
stopped=$SECONDS
orphan_status=0
wait "$orphan_pid" || orphan_status=$?
[ "$orphan_status" -eq 1 ] || fail "the client of a stopped server exited with $orphan_status, not 1"
[ $((SECONDS - stopped)) -le 5 ] || fail "the client took $((SECONDS - stopped)) s to notice the server had stopped"
grep -q "the connection to the server failed after .*$(host_port_for "$transport" "$port")" "$WORK/client-orphan.err" \
  || fail "the client's error does not say the connection to the server failed: $(cat "$WORK/client-orphan.err")"
clients=$(grep -c "measured round trips" "$WORK/server.out" || true)
[ "$clients" -eq 8 ] || fail "the server saw $clients clients say goodbye, not 8"
grep -q "replies on a second connection" "$WORK/server.err" || fail "no client used --two-connections"
echo "ok: $transport"
