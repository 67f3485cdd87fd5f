#!/bin/bash
# SPDX-License-Identifier: MIT
# The pub/sub tools end to end over loopback (tools/README.md): netio_throughput --publish to
# two netio_recv --subscribe (one high-throughput on one tag, one low-latency on two), every
# tag's stream verified; three subscribers through two data connections (--max-connections 2),
# verified and with the tear-downs reported; then netio_cat pub → netio_cat sub giving a file
# back byte for byte, and the count and hex formats; with keys (a build with libsodium),
# --key-file on both sides, and a subscriber without the key or from a network not allowed refused;
# a publisher whose subscribers all left, and one stopped while waiting for them.
#   pubsub_tools_test.sh NETIO_RECV NETIO_THROUGHPUT NETIO_CAT TRANSPORT(tcp|shm|fabric) [keys|no-keys]
set -euo pipefail
recv=$1 send=$2 cat_tool=$3 transport=$4 keys=${5:-no-keys}
source "$(dirname "$0")/tool_test_lib.sh"

# --- netio_throughput --publish → netio_recv --subscribe, both modes, --verify ---
"$send" --publish -e "$(endpoint_for "$transport" 0)" --tags 1,2,3 --subscribers 2 -s 64,4KiB -n 3000 --verify \
  --json --port-file "$WORK/port" --timeout 60s >"$WORK/pub.json" 2>"$WORK/pub.err" &
pub_pid=$!
BACKGROUND_PIDS+=("$pub_pid")
port=$(wait_for_port_file "$WORK/port" "$pub_pid")
publisher=$(endpoint_for "$transport" "$port")
"$recv" --subscribe -e "$publisher" --tags 2 --verify --json --report-interval 0 --timeout 60s \
  >"$WORK/ht.json" 2>"$WORK/ht.err" &
ht_pid=$!
BACKGROUND_PIDS+=("$ht_pid")
ll_status=0
"$recv" --subscribe -e "$publisher" --tags 1,3 --mode ll --verify --json --report-interval 0 --timeout 60s \
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
# Each tag's stream on its own: tags 1 and 3 in ll.json, 1000 messages per size each.
for name, tags in (("ht.json", [2]), ("ll.json", [1, 3])):
    with open(f"{work}/{name}") as f:
        per_tag = json.load(f)["per_tag"]
    assert [t["tag"] for t in per_tag] == tags, (name, per_tag)
    for t in per_tag:
        assert [r["size"] for r in t["results"]] == [64, 4096], (name, t)
        for r in t["results"]:
            assert r["messages"] == 1000 and r["lost"] == 0 and r["duplicated"] == 0 and r["corrupt"] == 0, (name, t)
PY

# --- the same under a connection limit: three subscribers through two data connections ---
"$send" --publish -e "$(endpoint_for "$transport" 0)" --tags 1,2,3 --subscribers 3 --max-connections 2 --policy lru-m \
  -s 64 -n 600 --verify --json --port-file "$WORK/port_limited" --timeout 60s \
  >"$WORK/pub_limited.json" 2>"$WORK/pub_limited.err" &
pub_pid=$!
BACKGROUND_PIDS+=("$pub_pid")
port=$(wait_for_port_file "$WORK/port_limited" "$pub_pid")
publisher=$(endpoint_for "$transport" "$port")
sub_pids=()
for tag in 1 2 3; do
  "$recv" --subscribe -e "$publisher" --tags "$tag" --verify --json --report-interval 0 --timeout 60s \
    >"$WORK/limited_$tag.json" 2>"$WORK/limited_$tag.err" &
  sub_pids+=("$!")
  BACKGROUND_PIDS+=("$!")
done
for pid in "${sub_pids[@]}"; do
  wait "$pid" || fail "netio_recv --subscribe under --max-connections exited with $?"
done
wait "$pub_pid" || fail "netio_throughput --publish --max-connections exited with $?"
# Round-robin over three subscribers through two connections: every message needs a tear-down.
grep -Eq "high-throughput data connections: [0-9]+ opened \([0-9]+ re-opened\), [1-9][0-9]+ torn down, peak 2 open of 2" \
  "$WORK/pub_limited.err" || fail "no tear-downs reported: $(cat "$WORK/pub_limited.err")"
python3 - "$WORK" <<'PY' || fail "JSON check under --max-connections failed"
import json, sys
work = sys.argv[1]
for tag in (1, 2, 3):
    with open(f"{work}/limited_{tag}.json") as f:
        got = json.load(f)["results"]
    assert [r["size"] for r in got] == [64], (tag, got)
    r = got[0]
    assert r["messages"] == 200, (tag, r)
    assert r["lost"] == 0 and r["duplicated"] == 0 and r["corrupt"] == 0, (tag, r)
PY

# Starts `netio_cat pub` in the background (ARGS after the endpoint, stdin from FILE), logs
# in $WORK/NAME.err; sets cat_pub_pid and cat_publisher (its endpoint once it listens).
start_cat_pub() {  # NAME STDIN_FILE ARGS...
  local name=$1 input=$2
  shift 2
  "$cat_tool" pub -e "$(endpoint_for "$transport" 0)" --port-file "$WORK/$name.port" "$@" <"$input" \
    2>"$WORK/$name.err" &
  cat_pub_pid=$!
  BACKGROUND_PIDS+=("$cat_pub_pid")
  cat_publisher=$(endpoint_for "$transport" "$(wait_for_port_file "$WORK/$name.port" "$cat_pub_pid")")
}

# --- netio_cat pub → netio_cat sub: records come back byte for byte ---
seq 1 5000 | sed 's/^/record /' >"$WORK/records.txt"
start_cat_pub records "$WORK/records.txt" --tag 7 --timeout 60s
"$cat_tool" sub -e "$cat_publisher" --tags 7 --format raw -n 5000 --timeout 60s \
  >"$WORK/records.out" 2>"$WORK/cat_sub.err" || fail "netio_cat sub exited with $?"
wait "$cat_pub_pid" || fail "netio_cat pub exited with $?"
cmp "$WORK/records.txt" "$WORK/records.out" || fail "netio_cat sub --format raw did not give the records back"

# --format count and hex, fixed-size records
head -c 4096 /dev/urandom >"$WORK/blob"
start_cat_pub blob "$WORK/blob" --tag 9 --record-size 1KiB --timeout 60s
"$cat_tool" sub -e "$cat_publisher" --tags 9 --format count -n 4 --timeout 60s \
  >"$WORK/count.out" 2>"$WORK/count.err" || fail "netio_cat sub --format count exited with $?"
wait "$cat_pub_pid" || fail "netio_cat pub --record-size exited with $?"
grep -q "^tag 9: 4 messages, 4096 bytes$" "$WORK/count.out" || fail "count format: $(cat "$WORK/count.out")"

printf 'hello\n' >"$WORK/hello"
start_cat_pub hello "$WORK/hello" --tag 1 --timeout 60s
"$cat_tool" sub -e "$cat_publisher" --tags 1 --format hex -n 1 --timeout 60s \
  >"$WORK/hex.out" 2>"$WORK/hex.err" || fail "netio_cat sub --format hex exited with $?"
wait "$cat_pub_pid" || fail "netio_cat pub exited with $?"
grep -q "^tag 1 size 6 from netio_cat: 68656c6c6f0a$" "$WORK/hex.out" || fail "hex format: $(cat "$WORK/hex.out")"

# --allow: a publisher that allows another network refuses the subscriber, naming why.
start_cat_pub far /dev/null --tag 1 --allow 10.0.0.0/8 --timeout 20s
if "$cat_tool" sub -e "$cat_publisher" --tags 1 -n 1 --timeout 15s >/dev/null 2>"$WORK/refused.err"; then
  fail "a subscriber from a network not allowed got in"
fi
grep -q "not in the networks" "$WORK/refused.err" || fail "refusal not explained: $(cat "$WORK/refused.err")"
kill "$cat_pub_pid" 2>/dev/null || true
wait "$cat_pub_pid" 2>/dev/null || true

# --key-file: the same key on both sides works, none is refused.
if [ "$keys" = keys ]; then
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/key"
  chmod 600 "$WORK/key"
  printf 'secret\n' >"$WORK/secret"
  start_cat_pub keyed "$WORK/secret" --tag 5 --key-file "$WORK/key" --timeout 30s
  if "$cat_tool" sub -e "$cat_publisher" --tags 5 -n 1 --timeout 15s >/dev/null 2>"$WORK/nokey.err"; then
    fail "a subscriber without the key got in"
  fi
  grep -q "key" "$WORK/nokey.err" || fail "refusal without the key not explained: $(cat "$WORK/nokey.err")"
  "$cat_tool" sub -e "$cat_publisher" --tags 5 --key-file "$WORK/key" --format raw -n 1 --timeout 20s \
    >"$WORK/keyed.out" 2>"$WORK/keyed.err" || fail "netio_cat sub --key-file exited with $?: $(cat "$WORK/keyed.err")"
  wait "$cat_pub_pid" || fail "netio_cat pub --key-file exited with $?"
  [ "$(cat "$WORK/keyed.out")" = secret ] || fail "keyed record: $(cat "$WORK/keyed.out")"
fi

# --- a publisher whose only subscriber goes away ends its run (exit 1), saying so, rather
# than counting messages published to nobody; one stopped while waiting for subscribers
# exits with 128 + SIGINT ---
rm -f "$WORK/port"
"$send" --publish -e "$(endpoint_for "$transport" 0)" --tags 1 --subscribers 1 -s 1KiB -t 60s --port-file "$WORK/port" \
  --timeout 90s >"$WORK/orphan.out" 2>"$WORK/orphan.err" &
orphan_pid=$!
BACKGROUND_PIDS+=("$orphan_pid")
port=$(wait_for_port_file "$WORK/port" "$orphan_pid")
"$recv" --subscribe -e "$(endpoint_for "$transport" "$port")" --tags 1 --report-interval 0 --timeout 60s >/dev/null 2>&1 &
sub_pid=$!
BACKGROUND_PIDS+=("$sub_pid")
sleep 1.5
kill -9 "$sub_pid"
gone=$SECONDS
orphan_status=0
wait "$orphan_pid" || orphan_status=$?
[ "$orphan_status" -eq 1 ] || fail "the publisher left without subscribers exited with $orphan_status, not 1"
[ $((SECONDS - gone)) -le 15 ] || fail "the publisher went on $((SECONDS - gone)) s without subscribers"
grep -q "every subscriber went away" "$WORK/orphan.err" || fail "no word of the subscribers leaving: $(cat "$WORK/orphan.err")"
rm -f "$WORK/port"
"$send" --publish -e "$(endpoint_for "$transport" 0)" --tags 1 --subscribers 1 -s 64 -t 1s --port-file "$WORK/port" \
  --timeout 60s >/dev/null 2>"$WORK/waiting.err" &
waiting_pid=$!
BACKGROUND_PIDS+=("$waiting_pid")
wait_for_port_file "$WORK/port" "$waiting_pid" >/dev/null
kill -INT "$waiting_pid"
waiting_status=0
wait "$waiting_pid" || waiting_status=$?
[ "$waiting_status" -eq 130 ] || fail "a publisher stopped while waiting for subscribers exited with $waiting_status, not 130"

# Bad arguments: clear errors, non-zero exits.
if "$cat_tool" sub -e "$(endpoint_for "$transport" 1)" >/dev/null 2>&1; then fail "netio_cat sub without --tags succeeded"; fi
if "$cat_tool" >/dev/null 2>&1; then fail "netio_cat without a subcommand succeeded"; fi
if "$recv" --subscribe -e "$(endpoint_for "$transport" 1)" >/dev/null 2>&1; then fail "netio_recv --subscribe without --tags succeeded"; fi
if "$send" --publish -e "$(endpoint_for "$transport" 0)" -s 64 >/dev/null 2>&1; then fail "netio_throughput --publish without --tags succeeded"; fi
echo "ok: pub/sub tools over $transport"
