"""Untrusted text made visible: the terminal's escaping rule, at the bottom of the package.

Names from a model, an ONNX file, a report or a server may carry control characters (a terminal
escape, an OSC 52 clipboard write, a bidirectional override). :func:`terminal` shows each of them
visibly. ``report/escape.py`` builds every other medium's rule on it; ``errors.py`` uses it for the
one-line messages (so the errors need not import the reports).
"""
from __future__ import annotations

import re
from typing import Any

# C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), the bidi embeddings/overrides/isolates
# and marks ("Trojan source"), the line and paragraph separators.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_NEWLINES = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                                    "\u202a-\u202e\u2066-\u2069]")


def visible_char(m: "re.Match[str]") -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def terminal(text: Any, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown visibly (``\\x1b``, ``\\x07``, ``\\u202e``).

    ``keep_newlines`` keeps ``\\n`` (for drifttui's own multi-line sentences); a ``\\r`` is never
    kept (it would overwrite the start of the line)."""
    s = text if isinstance(text, str) else str(text)
    return (_CONTROL_KEEP_NEWLINES if keep_newlines else CONTROL).sub(visible_char, s)
