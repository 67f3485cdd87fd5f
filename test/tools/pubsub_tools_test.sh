#!/bin/bash
# The pub/sub tools end to end over loopback (DESIGN.md §7): netio_throughput --publish to
# two netio_recv --subscribe (one high-throughput on one tag, one low-latency on two), every
# tag's stream verified; then netio_cat pub → netio_cat sub giving a file back byte for
# byte, and the count and hex formats.
#   pubsub_tools_test.sh NETIO_RECV NETIO_THROUGHPUT NETIO_CAT TRANSPORT(tcp|fabric)
set -euo pipefail
recv=$1 send=$2 cat_tool=$3 transport=$4
source "$(dirname "$0")/tool_test_lib.sh"

# --- netio_throughput --publish → netio_recv --subscribe, both modes, --verify ---
"$send" --publish -e "$(endpoint_for "$transport" 0)" --tags 1,2,3 --subscribers 2 -s 64,4KiB -n 3000 --verify \
  --json --port-file "$WORK/port" --timeout 60s >"$WORK/pub.json" 2>"$WORK/pub.err" &
pub_pid=$!
BACKGROUND_PIDS+=("$pub_pid")
port=$(wait_for_port_file "$WORK/port" "$pub_pid")
publisher=$(endpoint_for "$transport" "$port")
"$recv" --subscribe -e "$publisher" --tags 2 --verify --json --interval 0 --timeout 60s \
  >"$WORK/ht.json" 2>"$WORK/ht.err" &
ht_pid=$!
BACKGROUND_PIDS+=("$ht_pid")
ll_status=0
"$recv" --subscribe -e "$publisher" --tags 1,3 --mode ll --verify --json --interval 0 --timeout 60s \
  >"$WORK/ll.json" 2>"$WORK/ll.err" || ll_status=$?
[ "$ll_status" -eq 0 ] || fail "netio_recv --subscribe --mode ll exited with $ll_status"
ht_status=0
wait "$ht_pid" || ht_status=$?
[ "$ht_status" -eq 0 ] || fail "netio_recv --subscribe (ht) exited with $ht_status"
pub_status=0
wait "$pub_pid" || pub_status=$?
[ "$pub_status" -eq 0 ] || fail "netio_throughput --publish exited with $pub_status"

python3 - "$WORK" <<'PY' || fail "JSON check failed"
import json, sys
work = sys.argv[1]
def results(name):
    with open(f"{work}/{name}") as f:
        return json.load(f)["results"]
pub = results("pub.json")
assert [r["size"] for r in pub] == [64, 4096], pub
assert all(r["messages"] == 3000 for r in pub), pub
# Round-robin over three tags: 1000 per tag and size; tag 2 → ht, tags 1 and 3 → ll.
for name, expected in (("ht.json", 1000), ("ll.json", 2000)):
    got = results(name)
    assert [r["size"] for r in got] == [64, 4096], (name, got)
    for r in got:
        for key in ("size", "messages", "bytes", "seconds", "msgs_per_s", "gbps", "lost", "duplicated", "corrupt"):
            assert key in r, (name, key)
        assert r["messages"] == expected, (name, r)
        assert r["lost"] == 0 and r["duplicated"] == 0 and r["corrupt"] == 0, (name, r)
PY

# --- netio_cat pub → netio_cat sub: records come back byte for byte ---
seq 1 5000 | sed 's/^/record /' >"$WORK/records.txt"
"$cat_tool" pub -e "$(endpoint_for "$transport" 0)" --tag 7 --port-file "$WORK/cat_port" --timeout 60s \
  <"$WORK/records.txt" 2>"$WORK/cat_pub.err" &
cat_pub_pid=$!
BACKGROUND_PIDS+=("$cat_pub_pid")
port=$(wait_for_port_file "$WORK/cat_port" "$cat_pub_pid")
"$cat_tool" sub -e "$(endpoint_for "$transport" "$port")" --tags 7 --format raw -n 5000 --timeout 60s \
  >"$WORK/records.out" 2>"$WORK/cat_sub.err" || fail "netio_cat sub exited with $?"
wait "$cat_pub_pid" || fail "netio_cat pub exited with $?"
cmp "$WORK/records.txt" "$WORK/records.out" || fail "netio_cat sub --format raw did not give the records back"

# --format count and hex, fixed-size records
head -c 4096 /dev/urandom >"$WORK/blob"
"$cat_tool" pub -e "$(endpoint_for "$transport" 0)" --tag 9 --record-size 1KiB --port-file "$WORK/cat_port2" \
  --timeout 60s <"$WORK/blob" 2>"$WORK/cat_pub2.err" &
cat_pub_pid=$!
BACKGROUND_PIDS+=("$cat_pub_pid")
port=$(wait_for_port_file "$WORK/cat_port2" "$cat_pub_pid")
"$cat_tool" sub -e "$(endpoint_for "$transport" "$port")" --tags 9 --format count -n 4 --timeout 60s \
  >"$WORK/count.out" 2>"$WORK/count.err" || fail "netio_cat sub --format count exited with $?"
wait "$cat_pub_pid" || fail "netio_cat pub --record-size exited with $?"
grep -q "^tag 9: 4 messages, 4096 bytes$" "$WORK/count.out" || fail "count format: $(cat "$WORK/count.out")"

printf 'hello\n' | "$cat_tool" pub -e "$(endpoint_for "$transport" 0)" --tag 1 --port-file "$WORK/cat_port3" \
  --timeout 60s 2>"$WORK/cat_pub3.err" &
cat_pub_pid=$!
BACKGROUND_PIDS+=("$cat_pub_pid")
port=$(wait_for_port_file "$WORK/cat_port3" "$cat_pub_pid")
"$cat_tool" sub -e "$(endpoint_for "$transport" "$port")" --tags 1 --format hex -n 1 --timeout 60s \
  >"$WORK/hex.out" 2>"$WORK/hex.err" || fail "netio_cat sub --format hex exited with $?"
wait "$cat_pub_pid" || fail "netio_cat pub exited with $?"
grep -q "^tag 1 size 6 from netio_cat: 68656c6c6f0a$" "$WORK/hex.out" || fail "hex format: $(cat "$WORK/hex.out")"

# Bad arguments: clear errors, non-zero exits.
if "$cat_tool" sub -e "$(endpoint_for "$transport" 1)" >/dev/null 2>&1; then fail "netio_cat sub without --tags succeeded"; fi
if "$cat_tool" >/dev/null 2>&1; then fail "netio_cat without a subcommand succeeded"; fi
if "$recv" --subscribe -e "$(endpoint_for "$transport" 1)" >/dev/null 2>&1; then fail "netio_recv --subscribe without --tags succeeded"; fi
if "$send" --publish -e "$(endpoint_for "$transport" 0)" -s 64 >/dev/null 2>&1; then fail "netio_throughput --publish without --tags succeeded"; fi
echo "ok: pub/sub tools over $transport"
