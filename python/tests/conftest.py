"""Fixtures: a fresh embedded root per test, whose leader (if a test started one) is stopped after it."""
import os
import tempfile

import pytest

import vigil


@pytest.fixture
def root():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "root")
        yield path
        if os.path.isdir(path):
            vigil.connect(path, create=False).stop_leader()


@pytest.fixture
def db(root):
    return vigil.connect(root)
