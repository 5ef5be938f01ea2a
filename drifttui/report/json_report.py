"""Write and read JSON reports atomically: no half-written file is ever left behind."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from drifttui.core.result import Result
from drifttui.errors import InputError


def dumps(result: Result) -> str:
    return json.dumps(result.to_dict(), indent=2, allow_nan=False)


def check_writable(path: str) -> None:
    """Fail early (before any work) when --json cannot be written."""
    if path == "-":
        return
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise InputError(f"--json {path!r} is a directory", "give a file path, or - for stdout")
    if not parent.is_dir():
        raise InputError(f"--json {path!r}: folder {str(parent)!r} does not exist", "create it or pick another path")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise InputError(f"--json {path!r} is not writable", "pick a path you can write to")


def write(result: Result, path: str) -> None:
    text = dumps(result)
    if path == "-":
        sys.stdout.write(text + "\n")
        return
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".drifttui-", suffix=".json", dir=str(p.parent if str(p.parent) else "."))
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text + "\n")
        os.replace(tmp, p)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"cannot write --json {path!r}: {exc.strerror}", "pick a path you can write to") from exc


def read(path: str) -> Result:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"report {path!r} does not exist", "check the path")
    try:
        data: Any = json.loads(p.read_text())
        return Result.from_dict(data)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"report {path!r} is not a drifttui JSON report ({type(exc).__name__}: {exc})",
                         "pass a file written by drifttui check --json") from exc
