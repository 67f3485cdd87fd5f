#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the build tree into a scratch prefix, then builds and runs consumers against it,
# as a user without libsodium's development files would (its pkg-config module hidden):
#   - the README's first program and the getting-started guide's CMake and g++ lines,
#     taken from the pages exactly as written;
#   - a consumer project (find_package and pkg-config, every library) that sets no C++
#     standard of its own;
#   - for a shared build: the installed package files name no libsodium, and the installed
#     tools and the Python package (when built) run from the scratch prefix without
#     LD_LIBRARY_PATH (their RPATH).
set -euo pipefail
build_dir="$1"
source_dir="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$source_dir/../.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
fail() { echo "install check: $*" >&2; exit 1; }
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
prefix="$scratch/prefix"
pcdir="$(dirname "$(find "$prefix" -name netio.pc | head -1)")"
libdir="$(dirname "$pcdir")"

shared=0
if ls "$libdir"/libnetio.so* >/dev/null 2>&1; then shared=1; fi
if [ "$shared" = 1 ]; then
  # Consumers of the shared library need no libsodium development files.
  if grep -il sodium "$pcdir"/netio*.pc "$libdir"/cmake/netio/*.cmake; then
    fail "the installed package files above name libsodium: a shared-library consumer would need libsodium-dev"
  fi
  # The installed tools find the installed library through their RPATH.
  for tool in "$prefix"/bin/netio_*; do
    [ -x "$tool" ] || continue
    env -u LD_LIBRARY_PATH "$tool" --help >/dev/null || fail "$tool does not run from $prefix (RPATH?)"
  done
  # The Python package (when built) imports from the prefix's site directory and finds the
  # installed libraries through its RPATH: a round trip on loopback.
  python_init="$(find "$prefix" -path '*/netio/__init__.py' | head -1)"
  if [ -n "$python_init" ]; then
    python="$(sed -n 's/^NETIO_PYTHON_EXECUTABLE:INTERNAL=//p' "$build_dir/CMakeCache.txt")"
    site="$(dirname "$(dirname "$python_init")")"
    env -u LD_LIBRARY_PATH PYTHONPATH="$site" "${python:-python3}" -c '
import sys, netio
assert netio.__file__.startswith(sys.argv[1]), netio.__file__
with netio.Context() as ctx:
    with netio.HighThroughputReceiveSocket(ctx, "tcp://127.0.0.1:0") as receiver:
        with netio.HighThroughputSendSocket(ctx, receiver.local_endpoint) as sender:
            sender.send(b"installed")
            sender.flush()
            assert bytes(receiver.recv(timeout=5)) == b"installed"
' "$prefix" || fail "the Python package does not import from $site without LD_LIBRARY_PATH (RPATH?)"
  fi
fi

# A system without libsodium-dev: every pkg-config module of the system but libsodium's.
system_pc="$scratch/system-pkgconfig"
mkdir -p "$system_pc"
IFS=: read -r -a pc_path <<<"$(pkg-config --variable pc_path pkg-config)"
for dir in "${pc_path[@]}"; do
  for pc in "$dir"/*.pc; do
    [ -e "$pc" ] || continue
    case "$(basename "$pc")" in libsodium.pc) continue ;; esac
    [ -e "$system_pc/$(basename "$pc")" ] || ln -s "$pc" "$system_pc/"
  done
done
unset PKG_CONFIG_PATH
export PKG_CONFIG_LIBDIR="$pcdir:$system_pc"
if pkg-config --exists libsodium; then fail "libsodium's pkg-config module is not hidden"; fi

# The README's first program and its command line, as written.
work="$scratch/snippets"
mkdir -p "$work"
awk '/^## A first program/{on=1} on&&/^```cpp$/{grab=1;next} grab&&/^```$/{exit} grab' "$repo/README.md" >"$work/first.cpp"
readme_line="$(grep -m1 -o 'g++ -std=c++20 first.cpp [^`]*' "$repo/README.md")"
[ -s "$work/first.cpp" ] && [ -n "$readme_line" ] || fail "no first program or command line found in README.md"
(cd "$work" && bash -c "$readme_line -o first") || fail "README.md: '$readme_line' failed"
LD_LIBRARY_PATH="$libdir" "$work/first" >/dev/null || fail "README.md's first program failed"

# The getting-started guide's lines, as written: my_program.cpp is its example program,
# my_daq.cpp the publish/subscribe page's.
page="$repo/docs/guide/getting-started.md"
cp "$repo/docs/guide/examples/getting-started.cpp" "$work/my_program.cpp"
cp "$repo/docs/guide/examples/publish-subscribe.cpp" "$work/my_daq.cpp"
section() { awk -v fence="$1" '/^## Use it from your project/{on=1} on&&$0=="```"fence{grab=1;next} grab&&/^```$/{exit} grab' "$page"; }
guide_cmake="$(section cmake)"
[ -n "$guide_cmake" ] || fail "no cmake block in $page"
{
  echo "cmake_minimum_required(VERSION 3.22)"
  echo "project(my_program LANGUAGES CXX)"
  echo "add_executable(my_program my_program.cpp)"
  echo "$guide_cmake"
} >"$work/CMakeLists.txt"
cmake -S "$work" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null || fail "$page: the CMake lines do not build"
"$work/build/my_program" >/dev/null || fail "$page: the program built with CMake failed"
lines=0
while IFS= read -r line; do
  rm -f "$work/a.out"
  (cd "$work" && bash -c "$line") || fail "$page: '$line' failed"
  # Outside the system prefix a program built so finds the library through LD_LIBRARY_PATH
  # (or an RPATH, or ldconfig), as the page says.
  LD_LIBRARY_PATH="$libdir" "$work/a.out" >/dev/null || fail "$page: the program of '$line' failed"
  lines=$((lines + 1))
done < <(section sh | sed 's/ *#.*//' | grep '^g++')
[ "$lines" -ge 2 ] || fail "$page: expected two g++ lines, found $lines"

# The consumer project, with find_package and pkg-config.
cmake -S "$source_dir" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/build" -j2 >/dev/null
"$scratch/build/consumer_cmake"
"$scratch/build/consumer_pkgconfig"
"$scratch/build/consumer_scheduler"
"$scratch/build/consumer_pkgconfig_scheduled_push" >/dev/null
if [ -f "$pcdir/netio-metrics.pc" ]; then
  "$scratch/build/consumer_metrics" >/dev/null || fail "the netio::metrics consumer (find_package) failed"
  "$scratch/build/consumer_pkgconfig_metrics" >/dev/null || fail "the netio-metrics consumer (pkg-config) failed"
  echo "install check: netio::metrics and netio-metrics consumers built and ran"
fi
# man netio_recv after cmake --install: the tools' pages, when the build made them (pandoc).
if [ -f "$build_dir/docs/man/netio_recv.1" ]; then
  page="$prefix/share/man/man1/netio_recv.1"
  [ -f "$page" ] || fail "$page was not installed"
  if command -v man >/dev/null; then
    found="$(MANPATH="$prefix/share/man" man -w netio_recv)"
    [ "$found" = "$page" ] || fail "man -w netio_recv gives '$found', not $page"
  fi
  echo "install check: the man pages are installed (man netio_recv finds $page)"
fi
echo "install check: the README's and the guide's snippets, find_package and pkg-config consumers (netio," \
  "netio-pubsub, netio-scheduled-push, netio-scheduler) built and ran without libsodium's pkg-config module"
