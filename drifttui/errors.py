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
EXIT_CANNOT = 4        # repro / repair: a drift origin, but no test case or no repair (the line says why)


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


class InvalidArgument(InputError, ValueError):
    """A Python API argument out of its range (``min_top1=1.5``): an InputError, and a ValueError
    for callers that caught the ValueError it used to be."""


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


# A signal ends a run like Ctrl-C: temp files removed, one line, 128 + the signal number.
EXIT_SIGHUP = 129
EXIT_INTERRUPTED = 130
EXIT_SIGTERM = 143


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like KeyboardInterrupt (``finally`` blocks clean up).

    A BaseException, so that ``except Exception`` in user code or libraries does not swallow it."""

    def __init__(self, signum: int, name: str) -> None:
        self.signum = signum
        self.name = name
        super().__init__(name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


# Cap on the one line an error prints: room for a path, an op name and the fix.
MAX_LINE = 600


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """``text`` as a single line: colour codes stripped, line breaks and runs of blanks become
    one space, any other control character shown visibly (``\\x1b``: a name from a model may
    carry a terminal escape), cut (with an ellipsis) at ``limit`` characters."""
    import re

    from drifttui.report.escape import terminal

    flat = terminal(" ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split()))
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# Third-party packages drifttui runs: a failure inside one of them is that package's, not ours.
DEPENDENCIES = ("torch", "onnxruntime", "onnxscript", "onnx_ir", "onnx", "numpy", "google.protobuf")


def failing_dependency(exc: BaseException) -> str:
    """The dependency in whose code ``exc`` was raised ("" when it was raised in drifttui or user
    code): the package of the innermost traceback frame, by the file it lives in."""
    import sys
    import traceback

    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if not frames:
        return ""
    where = frames[-1].filename
    for name in DEPENDENCIES:
        mod = sys.modules.get(name)
        paths = list(getattr(mod, "__path__", []) or []) if mod is not None else []
        if any(where.startswith(p.rstrip("/\\") + ("/" if "/" in p else "\\")) for p in paths):
            return name
    return ""
