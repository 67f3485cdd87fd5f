# SPDX-License-Identifier: MIT
"""Fixtures of the Python module's suite (ctest python.pytest runs it with PYTHONPATH at the
build tree's package; docs/dev/testing.md)."""
import pytest

import netio


@pytest.fixture
def ctx():
    with netio.Context() as context:
        yield context


LOOPBACK = "tcp://127.0.0.1:0"
