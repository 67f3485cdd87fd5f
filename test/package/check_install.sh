#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the build tree into a scratch prefix, then builds and runs a consumer project
# against it: through find_package(netio) and through pkg-config, for every library.
set -euo pipefail
build_dir="$1"
source_dir="$(cd "$(dirname "$0")" && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
export PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig:$scratch/prefix/lib/x86_64-linux-gnu/pkgconfig:${PKG_CONFIG_PATH:-}"
cmake -S "$source_dir" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/build" -j2 >/dev/null
"$scratch/build/consumer_cmake"
"$scratch/build/consumer_pkgconfig"
"$scratch/build/consumer_scheduler"
"$scratch/build/consumer_pkgconfig_pubsub" >/dev/null
"$scratch/build/consumer_pkgconfig_scheduled_push" >/dev/null
# man netio_recv after cmake --install: the tools' pages, when the build made them (pandoc).
if [ -f "$build_dir/docs/man/netio_recv.1" ]; then
  page="$scratch/prefix/share/man/man1/netio_recv.1"
  [ -f "$page" ] || { echo "install check: $page was not installed" >&2; exit 1; }
  if command -v man >/dev/null; then
    found="$(MANPATH="$scratch/prefix/share/man" man -w netio_recv)"
    [ "$found" = "$page" ] || { echo "install check: man -w netio_recv gives '$found', not $page" >&2; exit 1; }
  fi
  echo "install check: the man pages are installed (man netio_recv finds $page)"
fi
echo "install check: find_package, pkg-config (netio, netio-pubsub, netio-scheduled-push) and scheduler consumers built and ran"
