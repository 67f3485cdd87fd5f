#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the naming conventions of docs/design/conventions.md that the compiler cannot:
constants are snake_case, never kCamel; a Catch2 test case's name has no semicolon (CMake
splits the discovered name there into two ctest entries that each run nothing).

  scripts/check_names.py [ROOT]     exit 0 when all is well, 1 with one line per declaration

A declaration is a name `k` + capital letter followed by `=`, `{` or `[` (a constant, an
array, an enumerator with a value) in the C++ files of the rooms. Well under a second; the
suite runs it (ctest -R style.names).
"""
import pathlib
import re
import sys

ROOMS = ("netio", "backends", "patterns", "scheduler", "tools", "test", "examples")
DECLARATION = re.compile(r"\b(k[A-Z][A-Za-z0-9]*)\s*(=|\{|\[)")
TEST_NAME = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')


def problems(root):
    for room in ROOMS:
        for path in sorted((root / room).rglob("*")):
            if path.suffix not in {".cpp", ".hpp", ".h", ".cc"} or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                for match in DECLARATION.finditer(line):
                    yield f"{path.relative_to(root)}:{number}: constant {match.group(1)} is kCamel; " \
                          f"constants are snake_case (docs/design/conventions.md)"
            if room == "test":
                text = path.read_text(errors="replace")
                for match in TEST_NAME.finditer(text):
                    if ";" in match.group(1):
                        number = text.count("\n", 0, match.start()) + 1
                        yield f"{path.relative_to(root)}:{number}: test case name with a semicolon: " \
                              f"{match.group(1)!r} (ctest would split it and run nothing; use a comma)"


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = list(problems(root))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
