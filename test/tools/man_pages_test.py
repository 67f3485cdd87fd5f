#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The man pages (docs/man/TOOL.1.md) and the tools' --help list the same options.

For every tool: each option that --help lists (of the tool and of each subcommand) is a
term of the page's OPTIONS section, and each term there is an option in --help; every
option the page mentions in bold anywhere is an option of some tool; --version prints
"TOOL VERSION" first; every page belongs to a tool given here; every option that the README
given with --readme (tools/README.md) mentions is an option of some tool.

In a page, an option is documented by a definition-list term that starts the line:
    **-e**, **--endpoint** *ENDPOINT*
    :   What it does.
A subcommand's options follow a heading "## TOOL SUBCOMMAND".

  man_pages_test.py --pages DIR --version X.Y.Z [--readme FILE] TOOL=PATH [TOOL=PATH...]
Exit status: 0 when all agree, 1 with a line per difference.
"""
import argparse
import pathlib
import re
import subprocess
import sys

OPTION_TOKEN = re.compile(r"^(-[A-Za-z0-9]|--[A-Za-z0-9][-A-Za-z0-9]*)$")
BOLD_OPTION = re.compile(r"\*\*(-[A-Za-z0-9]|--[A-Za-z0-9][-A-Za-z0-9]*)\*\*")


def run_help(path, args):
    result = subprocess.run([path, *args, "--help"], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"{path} {' '.join(args)} --help exited with {result.returncode}: {result.stderr}")
    return result.stdout


def blocks(help_text, title):
    """The lines of every block of CLI11's help that starts with `title` (e.g. 'Options:')."""
    lines, inside = [], False
    for line in help_text.splitlines():
        if line.strip() == title:
            inside = True
        elif inside and not line.strip():
            inside = False
        elif inside:
            lines.append(line)
    return lines


def help_options(help_text):
    """Options in CLI11's help: the first word of each line of 'Options:' that starts with '-'."""
    options = set()
    for line in blocks(help_text, "Options:"):
        if not line.startswith("  -"):
            continue  # a description continued on its own line
        names = line.split()[0].split(",")
        for name in names:
            if not OPTION_TOKEN.match(name):
                raise RuntimeError(f"cannot read an option name in: {line!r}")
            options.add(name)
    return options


def help_subcommands(help_text):
    return [line.split()[0] for line in blocks(help_text, "Subcommands:") if line.startswith("  ")]


def term_options(line):
    """The options named in a definition term: the bold option tokens before the argument."""
    return set(BOLD_OPTION.findall(line))


def check_tool(tool, path, page, version, problems, all_options):
    text = page.read_text()
    if f"title: {tool.upper()}" not in text:
        problems.append(f"{page.name}: the front matter should say 'title: {tool.upper()}'")
    if not re.search(rf"^{re.escape(tool)} - ", text, re.MULTILINE):
        problems.append(f"{page.name}: NAME should start with '{tool} - '")
    for section in ("# NAME", "# SYNOPSIS", "# DESCRIPTION", "# OPTIONS", "# EXIT STATUS", "# EXAMPLES"):
        if not re.search(rf"^{section}$", text, re.MULTILINE):
            problems.append(f"{page.name}: no '{section}' section")

    scopes_in_page = {}
    scope, in_options = None, False
    for line in text.splitlines():
        if line.startswith("# "):
            in_options, scope = line[2:].strip() == "OPTIONS", None
        elif line.startswith("## ") and in_options:
            words = line[3:].split()
            if words[:1] != [tool] or len(words) > 2:
                problems.append(f"{page.name}: heading {line!r} in OPTIONS: expected '## {tool} SUBCOMMAND'")
                continue
            scope = words[1] if len(words) == 2 else None
        elif in_options and line.startswith("**-"):
            scopes_in_page.setdefault(scope, set()).update(term_options(line))

    main_help = run_help(path, [])
    scopes_in_help = {None: help_options(main_help)}
    for sub in help_subcommands(main_help):
        scopes_in_help[sub] = help_options(run_help(path, [sub]))
    for scope in sorted(set(scopes_in_help) | set(scopes_in_page), key=lambda s: s or ""):
        where = f"{tool} {scope}" if scope else tool
        in_help = scopes_in_help.get(scope)
        in_page = scopes_in_page.get(scope, set())
        if in_help is None:
            problems.append(f"{page.name}: options of '{where}', which has no such subcommand")
            continue
        all_options.update(in_help)
        for option in sorted(in_help - in_page):
            problems.append(f"{page.name}: '{where} --help' lists {option}, the page's OPTIONS do not")
        for option in sorted(in_page - in_help):
            problems.append(f"{page.name}: the page's OPTIONS list {option}, '{where} --help' does not")

    result = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    expected = f"{tool} {version}"  # the first line; the build facts follow (usage_test.sh)
    if result.returncode != 0 or result.stdout.splitlines()[:1] != [expected]:
        problems.append(f"{tool} --version: exit {result.returncode}, printed {result.stdout.strip()!r}, "
                        f"expected {expected!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", required=True, type=pathlib.Path, help="docs/man")
    parser.add_argument("--version", required=True, help="the project's version")
    parser.add_argument("--readme", type=pathlib.Path, help="tools/README.md")
    parser.add_argument("tools", nargs="+", metavar="TOOL=PATH")
    args = parser.parse_args()

    problems = []
    all_options = set()
    tools = dict(entry.split("=", 1) for entry in args.tools)
    for tool, path in sorted(tools.items()):
        page = args.pages / f"{tool}.1.md"
        if not page.exists():
            problems.append(f"{tool}: no man page {page}")
            continue
        check_tool(tool, path, page, args.version, problems, all_options)
    for page in sorted(args.pages.glob("*.1.md")):
        name = page.name[: -len(".1.md")]
        if name not in tools:
            problems.append(f"{page.name}: a page for no tool that this test was given")
            continue
        # Options mentioned in bold anywhere (prose, other tools' options) exist in some tool.
        for option in sorted(set(BOLD_OPTION.findall(page.read_text())) - all_options):
            problems.append(f"{page.name}: mentions {option}, which no tool has")

    if args.readme:
        mentioned = set(re.findall(r"(?<![\w-])(--[a-z][-a-z0-9]*)", args.readme.read_text()))
        for option in sorted(mentioned - all_options):
            problems.append(f"{args.readme.name}: mentions {option}, which no tool has")

    for problem in problems:
        print(problem)
    print(f"man pages: {len(tools)} tools checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
