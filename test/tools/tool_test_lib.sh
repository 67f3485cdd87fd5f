# SPDX-License-Identifier: MIT
# Shared by the tool integration tests: endpoints per transport, waiting for a port file,
# failing with the logs of the tools attached.

# The endpoint of a transport (tcp, shm or fabric) and a port.
# fabric uses libfabric's tcp provider, which works on any Linux box.
endpoint_for() {  # TRANSPORT PORT
  case "$1" in
    tcp) echo "tcp://127.0.0.1:$2" ;;
    shm) echo "shm://netio-tools:$2" ;;
    fabric) echo "fabric://127.0.0.1:$2?provider=${NETIO_TEST_FABRIC_PROVIDER:-tcp}" ;;
    *) echo "unknown transport '$1'" >&2; return 1 ;;
  esac
}

# HOST:PORT as the tools' messages name an endpoint of that transport.
host_port_for() {  # TRANSPORT PORT
  case "$1" in
    shm) echo "netio-tools:$2" ;;
    *) echo "127.0.0.1:$2" ;;
  esac
}

fail() {
  echo "FAIL: $*" >&2
  for log in "$WORK"/*.err "$WORK"/*.out "$WORK"/*.json; do
    [ -s "$log" ] && { echo "--- $log" >&2; cat "$log" >&2; }
  done
  exit 1
}

# Waits up to 10 s for FILE to appear, while PID lives; prints its content (a port).
wait_for_port_file() {  # FILE PID
  for _ in $(seq 100); do
    [ -s "$1" ] && { cat "$1"; return 0; }
    kill -0 "$2" 2>/dev/null || fail "the listening tool exited before it listened"
    sleep 0.1
  done
  fail "no port file $1 after 10 s"
}

WORK=$(mktemp -d)
BACKGROUND_PIDS=()
cleanup() {
  for pid in "${BACKGROUND_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
