#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Prints the site directory of this interpreter under an install prefix, relative to it.

  site_directory.py PREFIX

The one on sys.path under PREFIX (Debian: lib/python3.11/dist-packages under /usr/local,
lib/python3/dist-packages under /usr), preferring one not under PREFIX/local; else the
standard scheme's (lib/pythonX.Y/site-packages), which the user then puts on PYTHONPATH.
"""
import os
import sys
import sysconfig

prefix = os.path.normpath(sys.argv[1])
found = [os.path.relpath(p, prefix) for p in sys.path
         if p.startswith(prefix.rstrip("/") + "/") and os.path.basename(p) in ("site-packages", "dist-packages")]
found.sort(key=lambda relative: relative.split(os.sep)[0] == "local")
if found:
    print(found[0])
else:
    standard = sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
    print(os.path.relpath(standard, prefix))
