#!/usr/bin/env bash
# The side-by-side benchmark of issue 5, on loopback, in one run: builds Release (installing
# missing Debian packages first), then runs netio's tools and the reference programs of
# tools/bench (raw TCP, ZeroMQ; fi_pingpong for libfabric) over the same message sizes with
# the same pinning (receiver/server on CPU 1, sender/client on CPU 0), repeats every point,
# and writes results.jsonl (every run), results.json (medians, spreads, ratios, targets),
# results.md (tables) and PNG plots into the output directory. Raw TCP also runs in netio's
# shapes (tcp_throughput --paged, tcp_pingpong --one-way), and libfabric in netio's connection
# shape (fi_oneway_pingpong), to bound what the design costs.
# Options:
#   --out DIR            output directory (default build/bench)
#   --repeat N           runs per point (default 3, at least 1)
#   --time DURATION      sending time per throughput point (default 1s)
#   --iterations N       measured round trips per RTT point (default 10000, +10 % warm-up)
#   --sizes LIST         throughput sizes (default 8,64,1KiB,16KiB,64KiB,1MiB)
#   --no-build           use the existing build/release
#   --no-fabric          skip the libfabric back-end (and fi_pingpong)
#   --no-pubsub          skip the ZeroMQ pub/sub reference
#   --small-pages SIZE   also run netio with this page size from 16 KiB on (default 512KiB,
#                        0 skips): what HighThroughputSendOptions::page_size buys over the default
#   --memory-time D      run memory_check.sh (the memory target) for D (default 20s; 0 skips)
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"

out=build/bench
repeat=3
per_point=1s
iterations=10000
sizes="8,64,1KiB,16KiB,64KiB,1MiB"
build=1
fabric=1
pubsub=1
small_pages=512KiB
memory_time=20s
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --time) per_point="$2"; shift 2 ;;
    --iterations) iterations="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-fabric) fabric=0; shift ;;
    --no-pubsub) pubsub=0; shift ;;
    --small-pages) small_pages="$2"; shift 2 ;;
    --memory-time) memory_time="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --repeat must be a positive integer" >&2; exit 2; }
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --iterations must be a positive integer" >&2; exit 2; }
[[ "$small_pages" =~ ^[0-9]+([KM]iB)?$ ]] || { echo "compare.sh: --small-pages takes a size such as 512KiB (0 skips)" >&2; exit 2; }

if [ "$build" = 1 ]; then
  scripts/install-deps.sh
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DNETIO_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release -j"$(nproc)" >/dev/null
fi
bin="$root/build/release/tools"
for b in netio_recv netio_throughput netio_pingpong bench/tcp_throughput bench/tcp_pingpong bench/zmq_throughput \
         bench/zmq_reqrep bench/zmq_pubsub bench/fi_oneway_pingpong; do
  [ -x "$bin/$b" ] || { echo "compare.sh: $bin/$b is missing (libzmq3-dev? build?)" >&2; exit 1; }
done
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
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi; rm -rf "$scratch"; }
trap cleanup EXIT

wait_for_port() {  # file
  for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}

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
  if ! wait_for_port "$scratch/port"; then
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

to_bytes() { python3 -c 'import sys
s=sys.argv[1].strip(); u={"":1,"b":1,"k":1024,"kib":1024,"m":1<<20,"mib":1<<20}
i=len(s.rstrip("KiBMkibm")); print(int(float(s[:i])*u[s[i:].lower()]))' "$1"; }
size_list=()
for s in ${sizes//,/ }; do size_list+=("$(to_bytes "$s")"); done
large_sizes=()
for s in "${size_list[@]}"; do [ "$s" -ge 16384 ] && large_sizes+=("$s"); done
join() { local IFS=,; echo "$*"; }

# netio_recv reports every size of one run: split it into one record per size.
record_netio() {  # SYSTEM REP
  python3 - "$scratch/out.json" "$1" "$2" >>"$raw" <<'PY' || echo "compare.sh: $1 repeat $2 failed" >&2
import json, sys
path, system, rep = sys.argv[1:]
for r in json.load(open(path))["results"]:
    print(json.dumps({"kind": "tput", "system": system, "size": r["size"], "rep": int(rep),
                      "data": {"results": [r]}}))
PY
}

# netio_recv + netio_throughput, every size in one run:
# netio_throughput SYSTEM REP LISTEN_ENDPOINT CONNECT_ENDPOINT SIZE... [-- SENDER_OPTION...]
netio_throughput() {
  local system="$1" rep="$2" listen="$3" connect="$4" sizes=()
  shift 4
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do sizes+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  pair "$bin/netio_recv" -e "$listen" --interval 0 --json --cpu "$recv_cpu" --timeout "$timeout" -- \
       "$bin/netio_throughput" -e "$connect" -s "$(join "${sizes[@]}")" -t "$per_point" --cpu "$send_cpu" \
       --timeout "$timeout" "$@"
  record_netio "$system" "$rep"
}

start_time=$(date +%s)
load_before="$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')"
awk '$1 > 0.5 { exit 1 }' /proc/loadavg ||
  echo "compare.sh: warning: load average ${load_before}: other work is running, expect noisy results" >&2
echo "compare.sh: load before: ${load_before}; sizes ${sizes}; ${repeat} repeats of ${per_point} / ${iterations} round trips" >&2
for rep in $(seq "$repeat"); do
  echo "== repeat $rep/$repeat: throughput" >&2
  report=server
  netio_throughput netio "$rep" "tcp://127.0.0.1:0" "tcp://127.0.0.1:@PORT@" "${size_list[@]}"
  if [ "$small_pages" != 0 ] && [ ${#large_sizes[@]} -gt 0 ]; then
    # The same with smaller pages: on the 1 MiB-L2 test box 512 KiB pages measured 10-25 %
    # faster than DESIGN.md's default 1 MiB from 16 KiB messages on (tools/bench/README.md).
    netio_throughput netio_small_pages "$rep" "tcp://127.0.0.1:0" "tcp://127.0.0.1:@PORT@" "${large_sizes[@]}" \
        -- --page-size "$small_pages"
  fi
  if [ "$fabric" = 1 ] && [ ${#large_sizes[@]} -gt 0 ]; then
    netio_throughput netio_fabric "$rep" "fabric://127.0.0.1:0?provider=tcp" \
        "fabric://127.0.0.1:@PORT@?provider=tcp" "${large_sizes[@]}"
  fi
  for size in "${size_list[@]}"; do
    pair "$bin/bench/zmq_throughput" --recv --json --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/bench/zmq_throughput" -e "tcp://127.0.0.1:@PORT@" -s "$size" -t "$per_point" --cpu "$send_cpu" \
         --timeout "$timeout"
    record tput zmq "$size" "$rep" "$scratch/out.json"
    # Raw TCP: writes of the message size, or 1 MiB writes from 16 KiB on (the one-stream ceiling).
    write_size=$size; [ "$size" -ge 16384 ] && [ "$size" -lt 1048576 ] && write_size=1048576
    pair "$bin/bench/tcp_throughput" --recv -s "$size" --json --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/bench/tcp_throughput" -e "tcp://127.0.0.1:@PORT@" -s "$size" --write-size "$write_size" \
         -t "$per_point" --cpu "$send_cpu" --timeout "$timeout"
    record tput tcp "$size" "$rep" "$scratch/out.json"
    # Raw TCP in netio's sender shape: copy into 1 MiB pages, a second thread writes full pages.
    pair "$bin/bench/tcp_throughput" --recv -s "$size" --json --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/bench/tcp_throughput" -e "tcp://127.0.0.1:@PORT@" -s "$size" --paged \
         -t "$per_point" --cpu "$send_cpu" --timeout "$timeout"
    record tput tcp_paged "$size" "$rep" "$scratch/out.json"
    if [ "$pubsub" = 1 ]; then
      report=client  # the subscriber (client) reports; the publisher is the "server" here
      pair "$bin/bench/zmq_pubsub" --publish -s "$size" -t "$per_point" --cpu "$send_cpu" --timeout "$timeout" -- \
           "$bin/bench/zmq_pubsub" -e "tcp://127.0.0.1:@PORT@" --json --cpu "$recv_cpu" --timeout "$timeout"
      record tput zmq_pubsub "$size" "$rep" "$scratch/out.json"
      report=server
    fi
  done

  echo "== repeat $rep/$repeat: round-trip time" >&2
  report=client
  for size in 8 1024; do
    rtt=(-s "$size" -n "$iterations" -w "$warmup" --json --cpu "$send_cpu" --timeout "$timeout")
    pair "$bin/netio_pingpong" --server -e tcp://127.0.0.1:0 --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/netio_pingpong" -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
    record rtt netio "$size" "$rep" "$scratch/out.json"
    pair "$bin/netio_pingpong" --server --busy-poll -e tcp://127.0.0.1:0 --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/netio_pingpong" --busy-poll -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
    record rtt netio_busy "$size" "$rep" "$scratch/out.json"
    pair "$bin/bench/tcp_pingpong" --server --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/bench/tcp_pingpong" -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
    record rtt tcp "$size" "$rep" "$scratch/out.json"
    pair "$bin/bench/tcp_pingpong" --server --busy-poll --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/bench/tcp_pingpong" --busy-poll -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
    record rtt tcp_busy "$size" "$rep" "$scratch/out.json"
    # Raw TCP in netio's connection shape: pings and pongs on two one-way connections.
    pair "$bin/bench/tcp_pingpong" --server --one-way --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/bench/tcp_pingpong" --one-way -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
    record rtt tcp_oneway "$size" "$rep" "$scratch/out.json"
    pair "$bin/bench/tcp_pingpong" --server --one-way --busy-poll --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/bench/tcp_pingpong" --one-way --busy-poll -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
    record rtt tcp_oneway_busy "$size" "$rep" "$scratch/out.json"
    pair "$bin/bench/zmq_reqrep" --server --cpu "$recv_cpu" --timeout "$timeout" -- \
         "$bin/bench/zmq_reqrep" -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
    record rtt zmq "$size" "$rep" "$scratch/out.json"
    if [ "$fabric" = 1 ]; then
      pair "$bin/netio_pingpong" --server -e "fabric://127.0.0.1:0?provider=tcp" --cpu "$recv_cpu" \
           --timeout "$timeout" -- \
           "$bin/netio_pingpong" -e "fabric://127.0.0.1:@PORT@?provider=tcp" "${rtt[@]}"
      record rtt netio_fabric "$size" "$rep" "$scratch/out.json"
      # fi_pingpong always spins: netio spinning too is the like-for-like comparison.
      pair "$bin/netio_pingpong" --server --busy-poll -e "fabric://127.0.0.1:0?provider=tcp" --cpu "$recv_cpu" \
           --timeout "$timeout" -- \
           "$bin/netio_pingpong" --busy-poll -e "fabric://127.0.0.1:@PORT@?provider=tcp" "${rtt[@]}"
      record rtt netio_fabric_busy "$size" "$rep" "$scratch/out.json"
      # libfabric without netio, spinning: one connection, and two one-way ones (netio's shape).
      pair "$bin/bench/fi_oneway_pingpong" --server --cpu "$recv_cpu" --timeout "$timeout" -- \
           "$bin/bench/fi_oneway_pingpong" -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
      record rtt fi_twoway "$size" "$rep" "$scratch/out.json"
      pair "$bin/bench/fi_oneway_pingpong" --server --one-way --cpu "$recv_cpu" --timeout "$timeout" -- \
           "$bin/bench/fi_oneway_pingpong" --one-way -e "tcp://127.0.0.1:@PORT@" "${rtt[@]}"
      record rtt fi_oneway "$size" "$rep" "$scratch/out.json"
    fi
    if [ "$have_fi_pingpong" = 1 ]; then
      # fi_pingpong has a control port of its own (no port 0): take a free ephemeral one.
      port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
      taskset -c "$recv_cpu" timeout 60 fi_pingpong -p tcp -e msg -B "$port" -I "$iterations" -S "$size" \
          >/dev/null 2>"$scratch/server.err" &
      server_pid=$!
      sleep 0.3
      # Its own format: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec; a round trip
      # is two transfers, so RTT mean = 2 x usec/xfer.
      taskset -c "$send_cpu" timeout 60 fi_pingpong -p tcp -e msg -P "$port" -I "$iterations" -S "$size" 127.0.0.1 \
          2>"$scratch/client.err" | awk -v size="$size" -v iterations="$iterations" \
          '$1 != "bytes" && NF >= 8 { printf "{\"size\":%s,\"iterations\":%s,\"rtt_us\":{\"mean\":%.3f}}\n", size, iterations, 2 * $7 }' \
          >"$scratch/out.json" || true
      wait "$server_pid" 2>/dev/null || true
      server_pid=""
      record rtt fi_pingpong "$size" "$rep" "$scratch/out.json"
    fi
  done
done
if [ "$memory_time" != 0 ]; then
  echo "== memory: memory_check.sh --time $memory_time" >&2
  # Its exit status says met or missed; the aggregate reads that from the JSON.
  "$root/tools/bench/memory_check.sh" --build "$root/build/release" --time "$memory_time" \
      >"$scratch/out.json" 2>"$scratch/client.err" || true
  record memory netio 64 1 "$scratch/out.json"
fi
elapsed=$(( $(date +%s) - start_time ))

machine="$(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), L2 $(lscpu 2>/dev/null | sed -n 's/^L2 cache: *//p'), $(uname -sr), libzmq $(pkg-config --modversion libzmq 2>/dev/null || echo '?'), libfabric $(pkg-config --modversion libfabric 2>/dev/null || echo '?')"
python3 "$root/tools/bench/aggregate.py" --raw "$raw" --out "$out" --machine "$machine" --small-pages "$small_pages" \
    --settings "compare.sh --repeat $repeat --time $per_point --iterations $iterations --sizes $sizes --small-pages $small_pages --memory-time $memory_time; receiver CPU $recv_cpu, sender CPU $send_cpu; ${elapsed} s of measurement; load (1/5/15 min) ${load_before} before, $(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/') after"
if command -v gnuplot >/dev/null; then
  (cd "$out" && gnuplot plots.gp) || echo "compare.sh: gnuplot failed; no plots" >&2
else
  echo "compare.sh: gnuplot not installed (gnuplot-nox): no plots" >&2
fi
cat "$out/results.md"
echo "compare.sh: wrote $out/{results.jsonl,results.json,results.md,*.png} in ${elapsed} s" >&2
