#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that docs/design/layers.md matches the tree and that public headers stay public.

  scripts/check_layers.py [ROOT]     exit 0 when all is well, 1 with one line per problem

Reads the tree, no list of folders of its own:
- every folder under backends/ and patterns/, every top-level folder with a CMakeLists.txt
  (a room: netio/, scheduler/, tools/, ...) and every folder under netio/ with a CMakeLists.txt
  of its own (a room beside the core: netio/internal/, netio/python/) is named in
  docs/design/layers.md as `path/`;
- a public header (one a CMakeLists.txt installs with install(DIRECTORY ...)) includes only
  public headers, the standard library and third-party headers: never a header of a src/
  folder, a back-end, netio/internal/ or the tools, which are not installed (a consumer's build
  would break on it).
The suite runs it (ctest -R docs.layers); it takes well under a second.
"""
import pathlib
import re
import sys

SKIP = {".git", ".ci", "build", "docs", "cmake", "scripts"}
HEADER_SUFFIXES = {".hpp", ".h", ".hh", ".hxx"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def source_files(root):
    """Every file of the tree, skipping build trees and version control."""
    for top in sorted(root.iterdir()):
        if top.name in SKIP or top.name.startswith("build") or top.name.startswith("."):
            continue
        if top.is_file():
            yield top
        elif top.is_dir():
            yield from (p for p in sorted(top.rglob("*")) if p.is_file())


def include_folder(path, root):
    """The include/ folder a file lies under (where its include name starts), or None."""
    parts = path.relative_to(root).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "include":
            return root.joinpath(*parts[: i + 1])
    return None


INSTALL_DIRECTORY = re.compile(r"install\(\s*DIRECTORY\s+([^\s)]+)")


def installed_folders(root, files):
    """The folders the CMakeLists.txt files install (install(DIRECTORY ...)): the public headers."""
    folders = []
    for cmake in (p for p in files if p.name == "CMakeLists.txt"):
        for folder in INSTALL_DIRECTORY.findall(cmake.read_text(errors="replace")):
            folder = folder.replace("${CMAKE_CURRENT_SOURCE_DIR}/", "").replace("${PROJECT_SOURCE_DIR}/", str(root) + "/")
            if "${" in folder:
                continue  # generated into the build tree
            folders.append((cmake.parent / folder).resolve())
    return folders


def rooms(root):
    """The folders layers.md must name: backends/*, patterns/*, top-level rooms, rooms under netio/."""
    named = []
    for top in sorted(root.iterdir()):
        if top.is_dir() and not top.name.startswith(".") and not top.name.startswith("build") and top.name not in SKIP:
            if (top / "CMakeLists.txt").is_file():
                named.append(top.name)
    core = root / "netio"
    if core.is_dir():
        named += [f"netio/{d.name}" for d in sorted(core.iterdir()) if (d / "CMakeLists.txt").is_file()]
    for parent in ("backends", "patterns"):
        folder = root / parent
        if folder.is_dir():
            named += [f"{parent}/{d.name}" for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith(".")]
    return named


def check_rooms(root, layers_text):
    problems = []
    for room in rooms(root):
        if not re.search(r"(?<![\w/.-])" + re.escape(room) + "/", layers_text):
            problems.append(f"docs/design/layers.md does not name the folder {room}/")
    return problems


def check_public_headers(root, files):
    headers = [p for p in files if p.suffix in HEADER_SUFFIXES]
    installed = installed_folders(root, files)

    def public(path):
        return any(path == folder or folder in path.parents for folder in installed)

    include_roots = sorted({r for r in (include_folder(p, root) for p in headers) if r is not None})
    problems = []
    for header in (h for h in headers if public(h)):
        for name in INCLUDE.findall(header.read_text(errors="replace")):
            # As the compiler finds it: beside the header, then in the include/ folders; a name
            # found nowhere there but in another folder of the tree (a src/ folder on the
            # include path) is that folder's header. Not in the tree: standard or third-party.
            found = [p.resolve() for p in [header.parent / name] + [r / name for r in include_roots] if p.is_file()]
            if not found:
                found = [p for p in headers if p.as_posix().endswith("/" + name)]
            if not found or any(public(p) for p in found):
                continue
            where = found[0].relative_to(root)
            problems.append(f"{header.relative_to(root)}: the public header includes \"{name}\", "
                            f"a private header of {where.parts[0]}/ ({where}), which is not installed")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent).resolve()
    layers = root / "docs" / "design" / "layers.md"
    if not layers.is_file():
        print(f"check_layers: {layers} is missing")
        return 1
    files = list(source_files(root))
    problems = check_rooms(root, layers.read_text()) + check_public_headers(root, files)
    for problem in problems:
        print(f"check_layers: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
