#!/bin/bash
# SPDX-License-Identifier: MIT
# netio_cat sub writing to a file: each record is in the file as it arrives, and none is lost
# when the tool is stopped by SIGTERM (issue 49, item 4). A publisher publishes 100 records
# and stays up; once they are in the file (polled, before any signal), SIGTERM; the file must
# hold all 100 and netio_cat must exit 128+15.
#   cat_sub_stop_test.sh NETIO_CAT TRANSPORT(tcp|shm|fabric)
set -euo pipefail
cat_tool=$1 transport=$2
source "$(dirname "$0")/tool_test_lib.sh"

records=100
mkfifo "$WORK/input"
"$cat_tool" pub -e "$(endpoint_for "$transport" 0)" --tag 7 --subscribers 1 --port-file "$WORK/port" \
  --timeout 60s <"$WORK/input" >"$WORK/pub.out" 2>"$WORK/pub.err" &
pub_pid=$!
BACKGROUND_PIDS+=("$pub_pid")
exec 3>"$WORK/input"  # held open: the publisher stays up after the records, as a live one would
port=$(wait_for_port_file "$WORK/port" "$pub_pid")
"$cat_tool" sub -e "$(endpoint_for "$transport" "$port")" --tags 7 --format hex --timeout 60s \
  >"$WORK/sub.out" 2>"$WORK/sub.err" &
sub_pid=$!
BACKGROUND_PIDS+=("$sub_pid")
for i in $(seq "$records"); do echo "record $i" >&3; done

# Each record reaches the file as it arrives: all 100 appear while the subscriber still runs.
for _ in $(seq 100); do
  [ "$(grep -c '^tag 7 ' "$WORK/sub.out" || true)" -eq "$records" ] && break
  kill -0 "$sub_pid" 2>/dev/null || fail "netio_cat sub exited early"
  sleep 0.1
done
in_file=$(grep -c '^tag 7 ' "$WORK/sub.out" || true)
[ "$in_file" -eq "$records" ] || fail "$in_file of $records records in the file while netio_cat sub ran"

kill -TERM "$sub_pid"
status=0
wait "$sub_pid" || status=$?
[ "$status" -eq 143 ] || fail "netio_cat sub exited with $status on SIGTERM (expected 143)"
in_file=$(grep -c '^tag 7 ' "$WORK/sub.out" || true)
[ "$in_file" -eq "$records" ] || fail "$in_file of $records records in the file after SIGTERM"
exec 3>&-
wait "$pub_pid" || true
echo "OK: $records records in the file as they came and after SIGTERM"
