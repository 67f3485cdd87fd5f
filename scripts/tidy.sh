#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# clang-tidy over netio's own sources, with the checks of .clang-tidy (the ones the code
# honours today: a new warning is a finding). Not part of CI: it takes about 4 s of CPU per
# source file, about 15 minutes on 2 cores for the whole tree. Run it before submitting:
#   scripts/tidy.sh                  every source file (libraries, back-ends, tools, tests)
#   scripts/tidy.sh FILE...          only these (e.g. the ones you changed:
#                                    scripts/tidy.sh $(git diff --name-only main -- '*.cpp'))
# Exits 1 when clang-tidy warns. Configures build/tidy (compile_commands.json) on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
command -v run-clang-tidy >/dev/null || { echo "tidy.sh: clang-tidy is not installed (apt-get install clang-tidy)" >&2; exit 2; }

[ -f build/tidy/compile_commands.json ] ||
  cmake -S . -B build/tidy -DCMAKE_BUILD_TYPE=Debug -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
# Generated headers (version, build facts) come from configuring; nothing needs building.
if [ $# -gt 0 ]; then
  files=("$@")
else
  # What the build compiles: the project's own sources, not what CMake generates.
  mapfile -t files < <(python3 -c 'import json, os, sys
root = os.getcwd() + "/"
seen = sorted({e["file"] for e in json.load(open("build/tidy/compile_commands.json"))})
print("\n".join(f[len(root):] for f in seen if f.startswith(root) and not f.startswith(root + "build/")))')
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
run-clang-tidy -p build/tidy -quiet -j"$(nproc)" "${files[@]/#/$PWD/}" >"$out" 2>&1 || true
if grep -q 'warning: \|error: ' "$out"; then
  grep -A3 'warning: \|error: ' "$out" >&2
  echo "tidy.sh: $(grep -c 'warning: \|error: ' "$out") finding(s)" >&2
  exit 1
fi
echo "tidy.sh: ${#files[@]} files, no findings"
