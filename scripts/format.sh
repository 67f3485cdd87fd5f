#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The C++ layout of the tree, by .clang-format (clang-format 14, Debian's clang-format).
#   scripts/format.sh            reformat every tracked C++ file in place
#   scripts/format.sh --check    change nothing; list the files that differ and exit 1 if any
#                                (what the suite's format_check test runs; a few seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
check=""
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  -h|--help) sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "format.sh: unknown option '$1' (--check)" >&2; exit 2 ;;
esac
command -v clang-format >/dev/null || { echo "format.sh: clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }

# Tracked files when this is a git checkout; otherwise (a source tarball) every C++ file.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h')
else
  mapfile -t files < <(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -print)
fi
if [ -z "$check" ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -P"$(nproc)" -n 32 clang-format -i
  exit 0
fi
# One clang-format for all of them: it names each file that differs in its warnings.
mapfile -t bad < <(printf '%s\0' "${files[@]}" | xargs -0 clang-format --dry-run 2>&1 |
                   sed -n 's/^\(.*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  printf 'format.sh: not formatted by .clang-format: %s\n' "${bad[@]}" >&2
  echo "format.sh: run scripts/format.sh to fix" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
