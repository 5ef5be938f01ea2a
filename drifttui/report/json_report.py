"""Write and read JSON reports atomically: no half-written file is ever left behind."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Optional

from drifttui.core.result import READABLE_VERSIONS, Result
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


# A report nests about 8 levels (evidence records in a step); a crafted file nested thousands of
# levels deep would exhaust the stack of every recursive reader after json.loads.
MAX_DEPTH = 64


def _depth(data: Any) -> int:
    """How deeply ``data`` nests lists and objects, without recursion (stops past MAX_DEPTH)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def read(path: str) -> Result:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"report {path!r} does not exist", "check the path")
    try:
        data: Any = json.loads(p.read_text())
    except RecursionError as exc:
        raise InputError(f"report {path!r} is nested too deeply to be a drifttui JSON report",
                         "pass a file written by drifttui check --json") from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"report {path!r} is not a drifttui JSON report ({type(exc).__name__}: {first_line(exc)})",
                         "pass a file written by drifttui check --json") from exc
    deepest = _depth(data)
    if deepest > MAX_DEPTH:
        raise InputError(f"report {path!r} is nested {deepest} levels deep; a drifttui report never is "
                         f"(at most {MAX_DEPTH})", "pass a file written by drifttui check --json")
    if not isinstance(data, dict) or data.get("schema_version") not in READABLE_VERSIONS:
        version = data.get("schema_version") if isinstance(data, dict) else None
        raise InputError(f"report {path!r} has schema_version {version!r}; this drifttui reads "
                         f"{' and '.join(map(str, READABLE_VERSIONS))}",
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
