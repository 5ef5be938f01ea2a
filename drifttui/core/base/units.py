"""Byte sizes: ``--max-memory 2G`` read, and sizes written for people (binary units)."""
from __future__ import annotations

import re

from drifttui.errors import InputError

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def parse_size(text: str) -> int:
    """``512M``, ``2G``, ``1.5GB``, ``1000000`` -> bytes (binary units)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise InputError(f"cannot read {text!r} as a memory size", "write e.g. --max-memory 512M or 2G")
    value = int(float(m.group(1)) * _UNITS[unit])
    if value <= 0:
        raise InputError(f"memory size {text!r} is not positive", "write e.g. --max-memory 512M or 2G")
    return value


def human(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f} GiB"  # pragma: no cover
