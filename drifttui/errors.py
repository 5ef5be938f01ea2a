"""Errors that end a run with a documented exit code and a one-line message.

Exit codes (README, ``--help`` and docs/cli.md say the same):
  0  no drift at the tolerance
  1  drift found
  2  bad usage or bad input (the message names the problem and the fix)
  3  the model or the runtime failed (export error, ONNX Runtime cannot run the graph, NaN outputs)
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3


class DriftTuiError(Exception):
    """Base class: ``str(err)`` is the one line shown to the user."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, fix: str = "") -> None:
        self.problem = message
        self.fix = fix
        super().__init__(f"{message}; {fix}" if fix else message)


class InputError(DriftTuiError):
    """The user gave us something we cannot use (file, spec, shape, path)."""

    exit_code = EXIT_USAGE


class ModelError(DriftTuiError):
    """The model, the exporter or ONNX Runtime failed on valid input."""

    exit_code = EXIT_RUNTIME


class Cancelled(Exception):
    """A run was cancelled through its CancelToken (not an error for the user)."""


def first_line(exc: BaseException, fallback: str = "") -> str:
    """The first line of an exception's message, without terminal colour codes."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    return text.splitlines()[0] if text else (fallback or type(exc).__name__)
