#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/check_layers.py on small trees of its own: it must fail on a folder layers.md does
not name and on a public header that includes a private one, and pass when all is named."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check_layers.py"


def write(root, path, text=""):
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def run(root):
    result = subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=60)
    return result.returncode, result.stdout


class CheckLayers(unittest.TestCase):
    def tree(self, layers, public_include):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        root = pathlib.Path(folder.name)
        write(root, "docs/design/layers.md", layers)
        write(root, "CMakeLists.txt", "install(DIRECTORY netio/include/netio DESTINATION include)\n")
        write(root, "netio/CMakeLists.txt")
        write(root, "internal/CMakeLists.txt", "add_library(internal INTERFACE)\n")
        write(root, "internal/include/netio/internal/codec.hpp", "#pragma once\n")
        write(root, "patterns/pubsub/CMakeLists.txt", "install(DIRECTORY include/netio/pubsub DESTINATION include/netio)\n")
        write(root, "netio/include/netio/api.hpp", f'#pragma once\n#include {public_include}\n#include <vector>\n')
        write(root, "netio/include/netio/other.hpp", "#pragma once\n")
        write(root, "netio/src/core_private.hpp", "#pragma once\n")
        write(root, "backends/tcp/socket.hpp", "#pragma once\n")
        write(root, "backends/shm/ring.hpp", "#pragma once\n")
        write(root, "patterns/pubsub/include/netio/pubsub/x.hpp", '#include "netio/api.hpp"\n')
        return root

    def test_all_named_and_public_passes(self):
        layers = "`netio/include/netio/` `internal/` `backends/tcp/` `backends/shm/` `patterns/pubsub/`"
        code, out = run(self.tree(layers, '"netio/other.hpp"'))
        self.assertEqual((code, out), (0, ""))

    def test_a_backend_folder_missing_from_layers_fails(self):
        layers = "`netio/` `internal/` `backends/tcp/` `patterns/pubsub/` (shm/ is elsewhere: `other/backends/shm/`)"
        code, out = run(self.tree(layers, '"netio/other.hpp"'))
        self.assertEqual(code, 1)
        self.assertIn("does not name the folder backends/shm/", out)
        self.assertNotIn("backends/tcp/", out)

    def test_a_room_under_netio_missing_from_layers_fails(self):
        layers = "`netio/` `internal/` `backends/tcp/` `backends/shm/` `patterns/pubsub/`"
        root = self.tree(layers, '"netio/other.hpp"')
        write(root, "netio/python/CMakeLists.txt", "pybind11_add_module(netio_python MODULE module.cpp)\n")
        code, out = run(root)
        self.assertEqual(code, 1)
        self.assertIn("does not name the folder netio/python/", out)
        write(root, "docs/design/layers.md", layers + " `netio/python/`")
        self.assertEqual(run(root), (0, ""))

    def test_a_public_header_including_a_private_one_fails(self):
        layers = "`netio/` `internal/` `backends/tcp/` `backends/shm/` `patterns/pubsub/`"
        for include, private in (('"core_private.hpp"', "netio/src/core_private.hpp"),
                                 ('"netio/internal/codec.hpp"', "internal/include/netio/internal/codec.hpp"),
                                 ('"backends/shm/ring.hpp"', "backends/shm/ring.hpp")):
            code, out = run(self.tree(layers, include))
            self.assertEqual(code, 1, include)
            self.assertIn(f"netio/include/netio/api.hpp: the public header includes {include}", out)
            self.assertIn(private, out)


if __name__ == "__main__":
    unittest.main()
