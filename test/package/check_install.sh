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
echo "install check: find_package, pkg-config (netio, netio-pubsub, netio-scheduled-push) and scheduler consumers built and ran"
