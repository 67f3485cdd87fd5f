#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The side-by-side benchmark (issues 5 and 14), on loopback, in one run: builds Release (installing
# missing Debian packages first), then runs netio's tools and the reference programs of
# tools/bench (raw TCP, ZeroMQ; fi_pingpong for libfabric) over the same message sizes with
# the same pinning (receiver/server on CPU 1, sender/client on CPU 0), repeats every point,
# and writes results.jsonl (every run), results.json (medians, spreads, ratios, targets),
# results.md (tables) and PNG plots into the output directory. Raw TCP also runs in netio's
# shapes (tcp_throughput --paged, tcp_pingpong --one-way), and libfabric in netio's connection
# shape (fi_oneway_pingpong), to bound what the design costs.
# Paired ratios: each repetition runs netio and the reference of each target back to back at
# the same size and mode (netio throughput at size S next to raw TCP or ZeroMQ at S; netio's
# round trip next to tcp_pingpong or fi_pingpong), one of the two first in odd repetitions and
# the other first in even ones, so that warm-up bias cancels. A target's figure is the median
# over the repetitions of the ratio within each repetition, shown with its min-max, next to the
# medians of both systems; the targets are judged on it. Use --repeat 3 or more (1: no spread).
# The POSIX round-trip targets are also judged on alternating_pingpong (netio and raw TCP in
# alternating chunks between the same two processes): the median of every chunk pair's ratio.
# The shm section (issue 39) pairs the same way: netio's tools over shm:// next to the same tools
# over tcp://, next to cold_memcpy (the cold memory bandwidth, from 16 KiB) or next to ZeroMQ
# over ipc:// (below 16 KiB), and shm:// round trips next to tcp:// ones, sleeping and
# busy-polling; then memory_check.sh streams over shm:// and samples both processes' RSS.
# Options:
#   --out DIR            output directory (default build/bench)
#   --repeat N           repetitions, i.e. runs per point and ratios per pair (default 3, at least 1)
#   --time DURATION      sending time per throughput point (default 1s)
#   --iterations N       measured round trips per RTT point (default 10000, +10 % warm-up)
#   --rtt-repeat N       round-trip repetitions (default: --repeat). The round-trip targets are
#                        judged on pairs, and on a VM whose speed changes every few hundred
#                        milliseconds many short pairs judge them better than a few long ones:
#                        e.g. --rtt-repeat 24 --iterations 3000
#   --sizes LIST         throughput sizes (default 8,64,1KiB,16KiB,64KiB,1MiB)
#   --no-build           use the existing build/release
#   --no-fabric          skip the libfabric back-end (and fi_pingpong)
#   --no-pubsub          skip publish/subscribe (netio beside ZeroMQ XPUB(NODROP)/SUB, 1 and 4
#                        high-throughput subscribers, at --pubsub-sizes)
#   --pubsub-sizes LIST  pub/sub message sizes (default 64,1KiB,64KiB)
#   --pubsub-only        only the publish/subscribe rows (no throughput, round trips or memory)
#   --pubsub-page-size SIZE  the publisher's page size (default: netio_throughput's, 1 MiB)
#   --rtt-only           only the round-trip rows (no throughput, publish/subscribe or memory)
#   --small-pages SIZE   also run netio with this page size from 16 KiB on (default 512KiB,
#                        0 skips): what HighThroughputSendOptions::page_size buys over the default
#   --memory-time D      run memory_check.sh (the memory target) for D (default 20s; 0 skips)
#   --no-shm             skip the shm:// section (issue 39)
#   --shm-only           only the shm:// section (no other throughput, publish/subscribe, round trips or memory)
#   --shm-sizes LIST     its throughput sizes (default 8,64,1KiB,64KiB,1MiB): msg/s against tcp:// and
#                        ZeroMQ ipc:// below 16 KiB, Gb/s against tcp:// and cold memcpy from 16 KiB
#   --memcpy-buffer SIZE each of cold_memcpy's two buffers (default 1GiB: several times the last-level
#                        cache; faulting them in costs a few seconds per run)
#   --shm-memory-time D  stream over shm:// for D with memory_check.sh --scheme shm (default 60s; 0 skips)
#   --shm-memory-interval S  its RSS sampling interval in seconds (default 1)
#   --build DIR          use DIR's tools (a build dir such as build/release; implies --no-build)
# Quick look (no figures to quote): --no-build --no-fabric --no-pubsub --no-shm --small-pages 0
#   --memory-time 0 --repeat 2 --time 100ms --iterations 1000 --sizes 64,16KiB
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
# shellcheck source=SCRIPTDIR/../../scripts/lib/bench_common.sh
source scripts/lib/bench_common.sh

out=build/bench
repeat=3
per_point=1s
iterations=10000
rtt_repeat=""
sizes="8,64,1KiB,16KiB,64KiB,1MiB"
build=1
fabric=1
pubsub=1
pubsub_sizes="64,1KiB,64KiB"
pubsub_only=0
pubsub_page=()
rtt_only=0
small_pages=512KiB
memory_time=20s
shm=1
shm_only=0
shm_sizes="8,64,1KiB,64KiB,1MiB"
memcpy_buffer=1GiB
shm_memory_time=60s
shm_memory_interval=1
build_dir="$root/build/release"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --time) per_point="$2"; shift 2 ;;
    --iterations) iterations="$2"; shift 2 ;;
    --rtt-repeat) rtt_repeat="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-fabric) fabric=0; shift ;;
    --no-pubsub) pubsub=0; shift ;;
    --pubsub-sizes) pubsub_sizes="$2"; shift 2 ;;
    --pubsub-page-size) pubsub_page=(--page-size "$2"); shift 2 ;;
    --pubsub-only) pubsub_only=1; memory_time=0; shm=0; shift ;;
    --rtt-only) rtt_only=1; pubsub=0; memory_time=0; small_pages=0; shm=0; shift ;;
    --small-pages) small_pages="$2"; shift 2 ;;
    --memory-time) memory_time="$2"; shift 2 ;;
    --no-shm) shm=0; shift ;;
    --shm-only) shm_only=1; shm=1; pubsub=0; memory_time=0; small_pages=0; shift ;;
    --shm-sizes) shm_sizes="$2"; shift 2 ;;
    --memcpy-buffer) memcpy_buffer="$2"; shift 2 ;;
    --shm-memory-time) shm_memory_time="$2"; shift 2 ;;
    --shm-memory-interval) shm_memory_interval="$2"; shift 2 ;;
    --build) build_dir="$(cd "$2" && pwd)"; build=0; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --repeat must be a positive integer" >&2; exit 2; }
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --iterations must be a positive integer" >&2; exit 2; }
rtt_repeat="${rtt_repeat:-$repeat}"
[[ "$rtt_repeat" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --rtt-repeat must be a positive integer" >&2; exit 2; }
[[ "$small_pages" =~ ^[0-9]+([KM]iB)?$ ]] || { echo "compare.sh: --small-pages takes a size such as 512KiB (0 skips)" >&2; exit 2; }

if [ "$build" = 1 ]; then
  scripts/install-deps.sh
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DNETIO_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release -j"$(nproc)" >/dev/null
fi
bin="$build_dir/tools"
required=(netio_recv netio_throughput netio_pingpong)
[ "$shm_only" = 1 ] || required+=(bench/tcp_throughput bench/tcp_pingpong bench/zmq_throughput bench/zmq_reqrep
                                  bench/zmq_pubsub bench/fi_oneway_pingpong bench/alternating_pingpong)
[ "$shm" = 0 ] || required+=(bench/cold_memcpy)
for b in "${required[@]}"; do
  [ -x "$bin/$b" ] || { echo "compare.sh: $bin/$b is missing (libzmq3-dev? build?)" >&2; exit 1; }
done
have_zmq=0
[ -x "$bin/bench/zmq_throughput" ] && have_zmq=1
[ "$shm" = 0 ] || [ "$have_zmq" = 1 ] || echo "compare.sh: no zmq_throughput (libzmq3-dev): no ZeroMQ ipc:// rows" >&2
have_fi_pingpong=0
[ "$fabric" = 1 ] && command -v fi_pingpong >/dev/null && have_fi_pingpong=1
export FI_SOCKETS_PE_WAITTIME=0

mkdir -p "$out"
out="$(cd "$out" && pwd)"
raw="$out/results.jsonl"
: >"$raw"
recv_cpu=1; send_cpu=0
if [ "$(nproc)" -lt 2 ]; then recv_cpu=0; echo "compare.sh: one CPU only: everything on CPU 0" >&2; fi
warmup=$(( iterations / 10 ))
timeout=60s

scratch="$(mktemp -d)"
server_pid=""
trap 'bench_cleanup "$scratch" "$server_pid"' EXIT

# record KIND SYSTEM SIZE REP FILE: appends the run's JSON (or null if it failed) to results.jsonl.
record() {
  local data="null"
  if [ -s "$5" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$5" 2>/dev/null; then
    data="$(tr -d '\n' <"$5")"
  else
    echo "compare.sh: $1 $2 size $3 repeat $4 failed (see $scratch/*.err)" >&2
  fi
  printf '{"kind":"%s","system":"%s","size":%s,"rep":%s,"data":%s}\n' "$1" "$2" "$3" "$4" "$data" >>"$raw"
}

# pair SERVER_CMD... -- CLIENT_CMD...: starts the server with --port-file, then the client with
# @PORT@ replaced by the port. The JSON of the side that reports is left in $scratch/out.json:
# the server's when "report=server", else the client's.
report=client
pair() {
  local server=() client=()
  while [ "$1" != "--" ]; do server+=("$1"); shift; done; shift
  client=("$@")
  rm -f "$scratch/port" "$scratch/out.json"
  if [ "$report" = server ]; then
    "${server[@]}" --port-file "$scratch/port" >"$scratch/out.json" 2>"$scratch/server.err" &
  else
    "${server[@]}" --port-file "$scratch/port" >/dev/null 2>"$scratch/server.err" &
  fi
  server_pid=$!
  if ! bench_wait_for_port "$scratch/port"; then
    kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; return 0
  fi
  local port; port="$(cat "$scratch/port")"
  client=("${client[@]//@PORT@/$port}")
  if [ "$report" = server ]; then
    "${client[@]}" >/dev/null 2>"$scratch/client.err" || true
    wait "$server_pid" 2>/dev/null || true
  else
    "${client[@]}" >"$scratch/out.json" 2>"$scratch/client.err" || true
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}

# to_bytes SIZE: 64, 1KiB, 1.5MiB (B, K/KiB, M/MiB) in bytes. awk, not python: it runs per size.
to_bytes() { awk -v s="$1" 'BEGIN {
  s = tolower(s); gsub(/[ \t]/, "", s); unit = s; sub(/^[0-9.]+/, "", unit)
  f = (unit == "" || unit == "b") ? 1 : (unit == "k" || unit == "kib") ? 1024 : 0
  if (unit == "m" || unit == "mib") f = 1048576
  if (f == 0 || s == unit) { print "compare.sh: bad size \"" s "\"" > "/dev/stderr"; exit 1 }
  printf "%d\n", (s + 0) * f }'; }
size_list=()
for s in ${sizes//,/ }; do size_list+=("$(to_bytes "$s")"); done
pubsub_size_list=()
for s in ${pubsub_sizes//,/ }; do pubsub_size_list+=("$(to_bytes "$s")"); done
shm_size_list=()
for s in ${shm_sizes//,/ }; do shm_size_list+=("$(to_bytes "$s")"); done

# netio_recv + netio_throughput at one size (netio_recv reports it like tcp_throughput does):
# netio_throughput KIND SYSTEM SIZE REP LISTEN_ENDPOINT CONNECT_ENDPOINT [SENDER_OPTION...]
netio_throughput() {
  local kind="$1" system="$2" size="$3" rep="$4" listen="$5" connect="$6"
  shift 6
  report=server
  pair "$bin/netio_recv" -e "$listen" --report-interval 0 --json --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/netio_throughput" -e "$connect" -s "$size" -t "$per_point" --cpu "$send_cpu" \
       --timeout "$timeout" "$@"
  record "$kind" "$system" "$size" "$rep" "$scratch/out.json"
}

# One function per system and kind: tput_SYSTEM SIZE REP and rtt_SYSTEM SIZE REP run one point
# and record it; each returns at once where that system is switched off or not measured at SIZE.
# The sequences below run them back to back in a fixed order (reversed every other repetition),
# so that the two systems of each target are neighbours and the aggregate can take their ratio
# within the repetition (paired ratios).
tput_netio() {
  netio_throughput tput netio "$1" "$2" "tcp://127.0.0.1:0" "tcp://127.0.0.1:@PORT@"
}
tput_netio_small_pages() {
  [ "$small_pages" != 0 ] && [ "$1" -ge 16384 ] || return 0
  # The same with smaller pages: on the 1 MiB-L2 test box 512 KiB pages measured 10-25 %
  # faster than the default 1 MiB from 16 KiB messages on (tools/bench/README.md).
  netio_throughput tput netio_small_pages "$1" "$2" "tcp://127.0.0.1:0" "tcp://127.0.0.1:@PORT@" \
      --page-size "$small_pages"
}
tput_netio_fabric() {
  [ "$fabric" = 1 ] && [ "$1" -ge 16384 ] || return 0
  netio_throughput tput netio_fabric "$1" "$2" "$(bench_endpoint fabric 0)" "$(bench_endpoint fabric @PORT@)"
}
tput_zmq() {
  report=server
  pair "$bin/bench/zmq_throughput" --recv --json --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/zmq_throughput" -e "tcp://127.0.0.1:@PORT@" -s "$1" -t "$per_point" --cpu "$send_cpu" \
       --timeout "$timeout"
  record tput zmq "$1" "$2" "$scratch/out.json"
}
tput_tcp() {
  # Raw TCP: writes of the message size, or 1 MiB writes from 16 KiB on (the one-stream ceiling).
  local write_size=$1
  [ "$1" -ge 16384 ] && [ "$1" -lt 1048576 ] && write_size=1048576
  report=server
  pair "$bin/bench/tcp_throughput" --recv -s "$1" --json --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/tcp_throughput" -e "tcp://127.0.0.1:@PORT@" -s "$1" --write-size "$write_size" \
       -t "$per_point" --cpu "$send_cpu" --timeout "$timeout"
  record tput tcp "$1" "$2" "$scratch/out.json"
}
tput_tcp_paged() {
  # Raw TCP in netio's sender shape: copy into 1 MiB pages, a second thread writes full pages.
  report=server
  pair "$bin/bench/tcp_throughput" --recv -s "$1" --json --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/tcp_throughput" -e "tcp://127.0.0.1:@PORT@" -s "$1" --paged \
       -t "$per_point" --cpu "$send_cpu" --timeout "$timeout"
  record tput tcp_paged "$1" "$2" "$scratch/out.json"
}

# The shm section (issue 39), kinds shm_tput and shm_rtt: netio's tools over shm:// and over
# tcp:// (the same tools, the same options), cold_memcpy from 16 KiB, ZeroMQ over ipc:// below.
shm_tput_shm() {
  netio_throughput shm_tput shm "$1" "$2" "$(bench_endpoint shm 0)" "$(bench_endpoint shm @PORT@)"
}
shm_tput_tcp() {
  netio_throughput shm_tput tcp "$1" "$2" "$(bench_endpoint tcp 0)" "$(bench_endpoint tcp @PORT@)"
}
shm_tput_memcpy() {
  [ "$1" -ge 16384 ] || return 0
  # On the sender's CPU, in calls of the message size: the copy into the ring the sender makes.
  "$bin/bench/cold_memcpy" -s "$1" --buffer-size "$memcpy_buffer" -t "$per_point" --json --cpu "$send_cpu" \
      >"$scratch/out.json" 2>"$scratch/client.err" || true
  record shm_tput memcpy "$1" "$2" "$scratch/out.json"
}
shm_tput_zmq_ipc() {
  [ "$1" -lt 16384 ] && [ "$have_zmq" = 1 ] || return 0
  # An abstract Unix socket, as shm:// uses: no file to remove.
  local endpoint="ipc://@netio-bench-zmq-$$"
  report=server
  pair "$bin/bench/zmq_throughput" --recv --bind "$endpoint" --json --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/zmq_throughput" -e "$endpoint" -s "$1" -t "$per_point" --cpu "$send_cpu" --timeout "$timeout"
  record shm_tput zmq_ipc "$1" "$2" "$scratch/out.json"
}
# shm_rtt_SYSTEM SIZE REP: netio_pingpong over shm:// or tcp://, sleeping or busy-polling
# (--busy-poll on both sides), $rtt being the client's common options.
shm_pingpong() {  # SYSTEM SIZE REP SCHEME [--busy-poll]
  local system="$1" size="$2" rep="$3" scheme="$4"
  shift 4
  report=client
  pair "$bin/netio_pingpong" --server "$@" -e "$(bench_endpoint "$scheme" 0)" --cpu "$recv_cpu" \
       --timeout "$timeout" -- \
       "$bin/netio_pingpong" "$@" -e "$(bench_endpoint "$scheme" @PORT@)" "${rtt[@]}"
  record shm_rtt "$system" "$size" "$rep" "$scratch/out.json"
}
shm_rtt_shm() { shm_pingpong shm "$1" "$2" shm; }
shm_rtt_tcp() { shm_pingpong tcp "$1" "$2" tcp; }
shm_rtt_shm_busy() { shm_pingpong shm_busy "$1" "$2" shm --busy-poll; }
shm_rtt_tcp_busy() { shm_pingpong tcp_busy "$1" "$2" tcp --busy-poll; }

# Publish/subscribe (issue 15): one publisher (sender CPU) and K subscriber processes (all on
# the receiver CPU), high-throughput subscriptions; each subscriber reports its own msg/s.
# fan_out SYSTEM SIZE REP K PUBLISHER_CMD... -- SUBSCRIBER_CMD... (@PORT@ as in pair) records
# kind "pubsub": msgs_per_s per subscriber (their mean), gbps the subscribers' sum.
fan_out() {
  local system="$1" size="$2" rep="$3" k="$4" publisher=() subscriber=() pids=() i
  shift 4
  while [ "$1" != "--" ]; do publisher+=("$1"); shift; done; shift
  subscriber=("$@")
  rm -f "$scratch/port" "$scratch"/sub_*.json
  "${publisher[@]}" --port-file "$scratch/port" >/dev/null 2>"$scratch/server.err" &
  server_pid=$!
  if bench_wait_for_port "$scratch/port"; then
    subscriber=("${subscriber[@]//@PORT@/$(cat "$scratch/port")}")
    for i in $(seq "$k"); do
      "${subscriber[@]}" >"$scratch/sub_$i.json" 2>"$scratch/client_$i.err" &
      pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" 2>/dev/null || true; done
  fi
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  python3 - "$k" "$size" "$scratch" >"$scratch/out.json" <<'PY' || rm -f "$scratch/out.json"
import json, sys
k, size, scratch = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
runs = [json.load(open(f"{scratch}/sub_{i}.json"))["results"][0] for i in range(1, k + 1)]
print(json.dumps({"subscribers": k, "results": [{"size": size,
      "msgs_per_s": sum(r["msgs_per_s"] for r in runs) / k,
      "gbps": sum(r["gbps"] for r in runs),
      "per_subscriber_msgs_per_s": [r["msgs_per_s"] for r in runs]}]}))
PY
  record pubsub "$system" "$size" "$rep" "$scratch/out.json"
}
pubsub_netio() {  # SIZE REP K
  fan_out "netio_pubsub_$3" "$1" "$2" "$3" \
      "$bin/netio_throughput" --publish -e tcp://127.0.0.1:0 --tags 1 --subscribers "$3" -s "$1" -t "$per_point" \
      "${pubsub_page[@]}" --cpu "$send_cpu" --timeout "$timeout" -- \
      "$bin/netio_recv" --subscribe -e "tcp://127.0.0.1:@PORT@" --tags 1 --report-interval 0 --json --cpu "$recv_cpu" \
      --timeout "$timeout"
}
pubsub_zmq() {  # SIZE REP K
  fan_out "zmq_pubsub_$3" "$1" "$2" "$3" \
      "$bin/bench/zmq_pubsub" --publish --subscribers "$3" -s "$1" -t "$per_point" --cpu "$send_cpu" \
      --timeout "$timeout" -- \
      "$bin/bench/zmq_pubsub" -e "tcp://127.0.0.1:@PORT@" --json --cpu "$recv_cpu" --timeout "$timeout"
}
pubsub_netio_1() { pubsub_netio "$1" "$2" 1; }
pubsub_zmq_1() { pubsub_zmq "$1" "$2" 1; }
pubsub_netio_4() { pubsub_netio "$1" "$2" 4; }
pubsub_zmq_4() { pubsub_zmq "$1" "$2" 4; }

# rtt_* SIZE REP: the round-trip programs, $rtt being the client's common options.
rtt_netio() {
  pair "$bin/netio_pingpong" --server -e tcp://127.0.0.1:0 --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/netio_pingpong" -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt netio "$1" "$2" "$scratch/out.json"
}
rtt_netio_busy() {
  pair "$bin/netio_pingpong" --server --busy-poll -e tcp://127.0.0.1:0 --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/netio_pingpong" --busy-poll -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt netio_busy "$1" "$2" "$scratch/out.json"
}
# netio's shape before replies: pongs on a second connection (--two-connections), to show
# what one connection gained.
rtt_netio_2c() {
  pair "$bin/netio_pingpong" --server -e tcp://127.0.0.1:0 --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/netio_pingpong" --two-connections -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt netio_2c "$1" "$2" "$scratch/out.json"
}
rtt_netio_busy_2c() {
  pair "$bin/netio_pingpong" --server --busy-poll -e tcp://127.0.0.1:0 --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/netio_pingpong" --two-connections --busy-poll -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt netio_busy_2c "$1" "$2" "$scratch/out.json"
}
rtt_netio_fabric_busy_2c() {
  [ "$fabric" = 1 ] || return 0
  pair "$bin/netio_pingpong" --server --busy-poll -e "$(bench_endpoint fabric 0)" --cpu "$recv_cpu" \
       --timeout "$timeout" -- \
       "$bin/netio_pingpong" --two-connections --busy-poll -e "$(bench_endpoint fabric @PORT@)" "${rtt[@]}"
  record rtt netio_fabric_busy_2c "$1" "$2" "$scratch/out.json"
}
# netio and raw TCP in alternating chunks between the same two processes (alternating_pingpong):
# 20 pairs of 500 round trips, each pair its own ratio, so that the VM's speed modes, which
# change every few hundred milliseconds, land on both systems alike.
rtt_alt_sleep() {
  pair "$bin/bench/alternating_pingpong" --server --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/alternating_pingpong" -e "tcp://127.0.0.1:@PORT@" -s "$1" --chunks 20 -n 500 -w 50 --json \
       --cpu "$send_cpu" --timeout "$timeout"
  record alt alt_sleep "$1" "$2" "$scratch/out.json"
}
rtt_alt_busy() {
  pair "$bin/bench/alternating_pingpong" --server --busy-poll --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/alternating_pingpong" -e "tcp://127.0.0.1:@PORT@" -s "$1" --chunks 20 -n 500 -w 50 --json \
       --busy-poll --cpu "$send_cpu" --timeout "$timeout"
  record alt alt_busy "$1" "$2" "$scratch/out.json"
}
rtt_tcp() {
  pair "$bin/bench/tcp_pingpong" --server --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/tcp_pingpong" -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt tcp "$1" "$2" "$scratch/out.json"
}
rtt_tcp_busy() {
  pair "$bin/bench/tcp_pingpong" --server --busy-poll --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/tcp_pingpong" --busy-poll -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt tcp_busy "$1" "$2" "$scratch/out.json"
}
rtt_tcp_oneway() {
  # Raw TCP in netio's connection shape: pings and pongs on two one-way connections.
  pair "$bin/bench/tcp_pingpong" --server --one-way --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/tcp_pingpong" --one-way -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt tcp_oneway "$1" "$2" "$scratch/out.json"
}
rtt_tcp_oneway_busy() {
  pair "$bin/bench/tcp_pingpong" --server --one-way --busy-poll --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/tcp_pingpong" --one-way --busy-poll -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt tcp_oneway_busy "$1" "$2" "$scratch/out.json"
}
rtt_zmq() {
  pair "$bin/bench/zmq_reqrep" --server --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/zmq_reqrep" -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt zmq "$1" "$2" "$scratch/out.json"
}
rtt_netio_fabric() {
  [ "$fabric" = 1 ] || return 0
  pair "$bin/netio_pingpong" --server -e "$(bench_endpoint fabric 0)" --cpu "$recv_cpu" \
       --timeout "$timeout" -- \
       "$bin/netio_pingpong" -e "$(bench_endpoint fabric @PORT@)" "${rtt[@]}"
  record rtt netio_fabric "$1" "$2" "$scratch/out.json"
}
rtt_netio_fabric_busy() {
  [ "$fabric" = 1 ] || return 0
  # fi_pingpong always spins: netio spinning too is the like-for-like comparison.
  pair "$bin/netio_pingpong" --server --busy-poll -e "$(bench_endpoint fabric 0)" --cpu "$recv_cpu" \
       --timeout "$timeout" -- \
       "$bin/netio_pingpong" --busy-poll -e "$(bench_endpoint fabric @PORT@)" "${rtt[@]}"
  record rtt netio_fabric_busy "$1" "$2" "$scratch/out.json"
}
# libfabric without netio, spinning: one connection, and two one-way ones (netio's shape).
rtt_fi_twoway() {
  [ "$fabric" = 1 ] || return 0
  pair "$bin/bench/fi_oneway_pingpong" --server --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/fi_oneway_pingpong" -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt fi_twoway "$1" "$2" "$scratch/out.json"
}
rtt_fi_oneway() {
  [ "$fabric" = 1 ] || return 0
  pair "$bin/bench/fi_oneway_pingpong" --server --one-way --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/bench/fi_oneway_pingpong" --one-way -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
  record rtt fi_oneway "$1" "$2" "$scratch/out.json"
}
rtt_fi_pingpong() {
  [ "$have_fi_pingpong" = 1 ] || return 0
  # fi_pingpong has a control port of its own (no port 0): take a free ephemeral one.
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  taskset -c "$recv_cpu" timeout 60 fi_pingpong -p tcp -e msg -B "$port" -I "$iterations" -S "$1" \
      >/dev/null 2>"$scratch/server.err" &
  server_pid=$!
  sleep 0.3
  # Its own format: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec; a round trip
  # is two transfers, so RTT mean = 2 x usec/xfer.
  taskset -c "$send_cpu" timeout 60 fi_pingpong -p tcp -e msg -P "$port" -I "$iterations" -S "$1" 127.0.0.1 \
      2>"$scratch/client.err" | awk -v size="$1" -v iterations="$iterations" \
      '$1 != "bytes" && NF >= 8 { printf "{\"size\":%s,\"iterations\":%s,\"rtt_us\":{\"mean\":%.3f}}\n", size, iterations, 2 * $7 }' \
      >"$scratch/out.json" || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  record rtt fi_pingpong "$1" "$2" "$scratch/out.json"
}

# The run order within a repetition. Neighbours run back to back, so each target's two systems
# are adjacent: netio/ZeroMQ msg/s below 16 KiB; netio (and its smaller pages)/raw TCP Gb/s and
# libfabric/POSIX Gb/s from 16 KiB; netio/raw TCP blocking, netio/raw TCP busy-poll and netio
# libfabric busy-poll/fi_pingpong round trips. Most same-shape comparisons are adjacent too.
# Odd repetitions run a sequence forwards, even ones backwards: each system of a pair goes first
# in half of them, so a warm-up (or cool-down) effect on whichever runs second cancels out.
small_sequence=(tcp tcp_paged netio zmq)
large_sequence=(netio_fabric netio tcp netio_small_pages tcp_paged zmq)
pubsub_sequence=(netio_1 zmq_1 netio_4 zmq_4)
# shm:// is the neighbour of each of its references: tcp:// and ZeroMQ ipc:// below 16 KiB, tcp://
# and cold memcpy from 16 KiB; sleeping and busy-polling round trips in pairs.
shm_small_sequence=(tcp shm zmq_ipc)
shm_large_sequence=(tcp shm memcpy)
shm_rtt_sequence=(tcp shm shm_busy tcp_busy)
rtt_sequence=(alt_sleep alt_busy zmq tcp_oneway netio_2c netio tcp tcp_oneway_busy netio_busy_2c netio_busy tcp_busy
              netio_fabric fi_oneway netio_fabric_busy_2c netio_fabric_busy fi_pingpong fi_twoway)

# run_sequence KIND SIZE REP SYSTEM...: runs KIND_SYSTEM SIZE REP for each, in the order given
# in odd repetitions and in reverse in even ones.
run_sequence() {
  local kind="$1" size="$2" rep="$3" systems=() i system
  shift 3
  if [ $(( rep % 2 )) = 1 ]; then systems=("$@"); else for (( i = $#; i >= 1; i-- )); do systems+=("${!i}"); done; fi
  for system in "${systems[@]}"; do "${kind}_${system}" "$size" "$rep"; done
}

start_time=$(date +%s)
load_before="$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')"
awk '$1 > 0.5 { exit 1 }' /proc/loadavg ||
  echo "compare.sh: warning: load average ${load_before}: other work is running, expect noisy results" >&2
shown_sizes="$sizes"
[ "$shm_only" = 0 ] || shown_sizes="$shm_sizes"
echo "compare.sh: load before: ${load_before}; sizes ${shown_sizes}; ${repeat} repeats of ${per_point}, ${rtt_repeat} of ${iterations} round trips" >&2
# The first --repeat repetitions run everything; further ones (--rtt-repeat above --repeat)
# only the round trips.
reps="$repeat"
[ "$pubsub_only" = 1 ] || [ "$shm_only" = 1 ] || [ "$rtt_repeat" -le "$reps" ] || reps="$rtt_repeat"
for rep in $(seq "$reps"); do
  order="forwards"; [ $(( rep % 2 )) = 0 ] && order="backwards"
  [ "$pubsub_only" = 1 ] || [ "$rtt_only" = 1 ] || [ "$shm_only" = 1 ] || [ "$rep" -gt "$repeat" ] ||
    echo "== repeat $rep/$repeat: throughput (run order $order)" >&2
  for size in "${size_list[@]}"; do
    [ "$pubsub_only" = 0 ] && [ "$rtt_only" = 0 ] && [ "$shm_only" = 0 ] && [ "$rep" -le "$repeat" ] || break
    if [ "$size" -ge 16384 ]; then
      run_sequence tput "$size" "$rep" "${large_sequence[@]}"
    else
      run_sequence tput "$size" "$rep" "${small_sequence[@]}"
    fi
  done

  if [ "$pubsub" = 1 ] && [ "$rep" -le "$repeat" ]; then
    echo "== repeat $rep/$repeat: publish/subscribe, 1 and 4 subscribers (run order $order)" >&2
    for size in "${pubsub_size_list[@]}"; do run_sequence pubsub "$size" "$rep" "${pubsub_sequence[@]}"; done
  fi

  if [ "$shm" = 1 ] && [ "$rep" -le "$repeat" ]; then
    echo "== repeat $rep/$repeat: shm:// against tcp://, cold memcpy and ZeroMQ ipc:// (run order $order)" >&2
    for size in "${shm_size_list[@]}"; do
      if [ "$size" -ge 16384 ]; then
        run_sequence shm_tput "$size" "$rep" "${shm_large_sequence[@]}"
      else
        run_sequence shm_tput "$size" "$rep" "${shm_small_sequence[@]}"
      fi
    done
    rtt=(-s 8 -n "$iterations" -w "$warmup" --json --cpu "$send_cpu" --timeout "$timeout")
    run_sequence shm_rtt 8 "$rep" "${shm_rtt_sequence[@]}"
  fi

  [ "$pubsub_only" = 1 ] || [ "$shm_only" = 1 ] || [ "$rep" -gt "$rtt_repeat" ] ||
    echo "== repeat $rep/$rtt_repeat: round-trip time (run order $order)" >&2
  report=client
  for size in 8 1024; do
    [ "$pubsub_only" = 0 ] && [ "$shm_only" = 0 ] && [ "$rep" -le "$rtt_repeat" ] || break
    rtt=(-s "$size" -n "$iterations" -w "$warmup" --json --cpu "$send_cpu" --timeout "$timeout")
    run_sequence rtt "$size" "$rep" "${rtt_sequence[@]}"
  done
done
if [ "$memory_time" != 0 ]; then
  echo "== memory: memory_check.sh --time $memory_time" >&2
  # Its exit status says met or missed; the aggregate reads that from the JSON.
  "$root/tools/bench/memory_check.sh" --build "$build_dir" --time "$memory_time" \
      >"$scratch/out.json" 2>"$scratch/client.err" || true
  record memory netio 64 1 "$scratch/out.json"
fi
if [ "$shm" = 1 ] && [ "$shm_memory_time" != 0 ]; then
  echo "== memory over shm://: memory_check.sh --scheme shm --time $shm_memory_time" >&2
  # Its exit status says met or missed; the aggregate reads flatness from the JSON.
  "$root/tools/bench/memory_check.sh" --build "$build_dir" --scheme shm --time "$shm_memory_time" \
      --interval "$shm_memory_interval" >"$scratch/out.json" 2>"$scratch/client.err" || true
  record shm_memory shm 64 1 "$scratch/out.json"
fi
elapsed=$(( $(date +%s) - start_time ))

shm_settings=" --no-shm"
[ "$shm" = 0 ] ||
  shm_settings=" --shm-sizes $shm_sizes --memcpy-buffer $memcpy_buffer --shm-memory-time $shm_memory_time"
[ "$shm_only" = 0 ] || shm_settings=" --shm-only$shm_settings"
machine="$(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), L2 $(lscpu 2>/dev/null | sed -n 's/^L2 cache: *//p'), $(uname -sr), libzmq $(pkg-config --modversion libzmq 2>/dev/null || echo '?'), libfabric $(pkg-config --modversion libfabric 2>/dev/null || echo '?')"
python3 "$root/tools/bench/aggregate.py" --raw "$raw" --out "$out" --machine "$machine" --small-pages "$small_pages" \
    --settings "compare.sh --repeat $repeat --rtt-repeat $rtt_repeat --time $per_point --iterations $iterations --sizes $sizes --pubsub-sizes $pubsub_sizes ${pubsub_page[*]:+--pubsub-page-size ${pubsub_page[1]}} --small-pages $small_pages --memory-time $memory_time$shm_settings; receiver CPU $recv_cpu, sender CPU $send_cpu; ${elapsed} s of measurement; load (1/5/15 min) ${load_before} before, $(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/') after"
if command -v gnuplot >/dev/null; then
  (cd "$out" && gnuplot plots.gp) || echo "compare.sh: gnuplot failed; no plots" >&2
else
  echo "compare.sh: gnuplot not installed (gnuplot-nox): no plots" >&2
fi
cat "$out/results.md"
echo "compare.sh: wrote $out/{results.jsonl,results.json,results.md,*.png} in ${elapsed} s" >&2
