"""The files users deploy: made by the real deployment tools (the `deploy` extra, `make install-deploy`).

A test needs a tool through ``needs(name)``: when the tool is not installed the test is skipped
with the install command (only a missing library skips; any other import failure is a bug).
Tests marked ``deploy`` are the long tail (`make test-deploy`); unmarked ones run in `make test`.
"""
from __future__ import annotations

import importlib

import pytest

TOOLS = {"onnxsim": "onnxsim", "onnxslim": "onnxslim", "onnxconverter_common": "onnxconverter-common"}


def needs(module: str):
    """The tool's module, or a skip that says how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.skip(f"{TOOLS.get(module, module)} is not installed (make install-deploy)")
