"""Write and read JSON reports atomically: no half-written file is ever left behind."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Optional

from drifttui.core.result import SCHEMA_VERSION, Result
from drifttui.errors import InputError, first_line
from drifttui.report.validate import ReportShapeError, check_report
from drifttui.report.outputs import check_output, write_atomic


def dumps(result: Result) -> str:
    return json.dumps(result.to_dict(), indent=2, allow_nan=False)


def check_writable(path: str, inputs: Iterable[Optional[str]] = ()) -> None:
    """Fail early (before any work) when --json cannot be written or names an input."""
    check_output(path, "--json", inputs)


def write(result: Result, path: str) -> None:
    write_atomic(path, dumps(result) + "\n", "--json")


def read(path: str) -> Result:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"report {path!r} does not exist", "check the path")
    try:
        data: Any = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"report {path!r} is not a drifttui JSON report ({type(exc).__name__}: {first_line(exc)})",
                         "pass a file written by drifttui check --json") from exc
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        version = data.get("schema_version") if isinstance(data, dict) else None
        raise InputError(f"report {path!r} has schema_version {version!r}; this drifttui reads {SCHEMA_VERSION}",
                         "pass a file written by drifttui check --json (this version)")
    try:
        check_report(data)
    except ReportShapeError as exc:
        raise InputError(f"report {path!r} is damaged: {exc}",
                         "pass a file written by drifttui check --json, unedited") from exc
    try:
        return Result.from_dict(data)
    except Exception as exc:
        raise InputError(f"report {path!r} is not a drifttui JSON report ({type(exc).__name__}: {exc})",
                         "pass a file written by drifttui check --json") from exc
