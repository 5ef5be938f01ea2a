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
    """The first line of an exception's message (a library's: its detail lines are a dump).  A control
    character in it stays (a name from a file may carry one): ``one_line`` shows it visibly."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else (fallback or type(exc).__name__)


def folded(exc: BaseException, limit: int = 300) -> str:
    """An exception of the user's own code, every line of its message folded into one (``first line;
    second line``), cut at ``limit`` characters: the detail a user wrote on a second line is kept."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = "; ".join(lines) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
    """``text`` as a single line: line breaks and runs of blanks become one space, any other control
    character shown visibly, colour codes too (``\\x1b[31m``: a name from a model may carry a terminal
    escape, and the user must find it in the file as it is spelt), cut (with an ellipsis) at ``limit``."""
    from drifttui.untrusted import terminal

    flat = terminal(" ".join(text.split()))
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


# What the machine refused (issue 34, item 3): exit 2 with the cause and the path, never "an error
# inside onnx" or "internal failure".  errno -> (what happened, the fix)
_ENVIRONMENT = {
    "ENOSPC": ("no space left on the device", "free space there, or write elsewhere (TMPDIR for temporary files)"),
    "EDQUOT": ("the disk quota is exceeded", "free space there, or write elsewhere (TMPDIR for temporary files)"),
    "EFBIG": ("the file is larger than this process may write (the file-size limit, ulimit -f)",
              "raise the limit (ulimit -f unlimited) or write elsewhere"),
    "EACCES": ("permission denied", "pick a path you can write to (TMPDIR for temporary files)"),
    "EPERM": ("operation not permitted", "pick a path you can write to (TMPDIR for temporary files)"),
    "EROFS": ("the file system is read-only", "pick a path on a writable file system"),
    "ENOTEMPTY": ("the folder is not empty (another run wrote into it?)", "give a new folder"),
    "EMFILE": ("too many open files", "raise the limit (ulimit -n) or compare fewer samples at once"),
    "ENFILE": ("too many open files on this machine", "close other programs or retry later"),
    "EADDRINUSE": ("the address is already in use (another server on that port?)", "give another --port"),
    "EADDRNOTAVAIL": ("the address is not one of this machine's", "give --host an address of this machine"),
}
# the same causes said by a library in words (ONNX Runtime, torch's writers) rather than as an OSError
_ENVIRONMENT_WORDS = {"No space left on device": "ENOSPC", "File too large": "EFBIG", "Disk quota exceeded": "EDQUOT"}


def _os_error(exc: BaseException) -> "OSError | None":
    """The OSError ``exc`` is, or was raised from / while handling (``__cause__``, ``__context__``)."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, OSError):
            return exc
        exc = exc.__cause__ or exc.__context__      # type: ignore[assignment]
        seen += 1
    return None


def _path_of(exc: BaseException) -> str:
    """The file an OSError without a filename was writing: an open file, or a ``path``-like local,
    of the innermost frames of its traceback (a write error carries no name)."""
    import io
    import os
    import traceback

    frames = [f for f, _ in traceback.walk_tb(exc.__traceback__)][::-1][:6]
    for frame in frames:
        for value in frame.f_locals.values():
            name = getattr(value, "name", None) if isinstance(value, io.IOBase) else None
            if isinstance(name, str) and os.sep in name:
                return name
        for key in ("path", "filename", "file_path", "f", "location", "dst", "out"):
            value = frame.f_locals.get(key)
            if isinstance(value, os.PathLike):
                value = os.fspath(value)
            if isinstance(value, str) and os.sep in value:
                return value
    return ""


def environment_failure(exc: BaseException, path: str = "") -> "InputError | None":
    """``exc`` as an exit-2 error when the machine refused (a full disk, a file-size limit, a permission,
    a busy port, a host that does not resolve): the cause, the path when known (else ``path``, what
    the caller was writing), the fix; None otherwise."""
    import errno
    import socket
    import tempfile

    err = _os_error(exc)
    if isinstance(err, socket.gaierror):
        return InputError(f"the host name does not resolve ({err.strerror or err})",
                          "give --host an address or a host name of this machine, e.g. 127.0.0.1")
    code = errno.errorcode.get(err.errno or 0, "") if err is not None else ""
    if code not in _ENVIRONMENT:
        code = next((c for words, c in _ENVIRONMENT_WORDS.items() if words in str(exc)), "")
        err = None
    if not code:
        return None
    what, fix = _ENVIRONMENT[code]
    path = (getattr(err, "filename", None) if err is not None else None) or _path_of(err or exc) or path
    where = (f" at {path!r}" if path else
             "" if code.startswith("EADDR") else
             f" (the path was not given: the output, or drifttui's temporary files under {tempfile.gettempdir()!r})")
    detail = first_line(err if err is not None else exc)
    return InputError(f"the machine refused: {what}{where} [{detail[:200]}]", fix)
