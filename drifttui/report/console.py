"""The Rich console the text reports print to.

In a terminal: its width (Rich reads it, or $COLUMNS).  Piped or redirected without $COLUMNS:
no wrapping at all, so that a log or a `grep` sees one line per line of the report (Rich would
wrap at 80 columns and break the continuation lines' indentation).
"""
from __future__ import annotations

import os
from typing import IO, Optional

from rich.console import Console

# wide enough that no line of a report wraps; lines are never padded to it
UNWRAPPED_WIDTH = 100_000


def report_console(file: Optional[IO[str]] = None) -> Console:
    console = Console(file=file)
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(file=file, width=UNWRAPPED_WIDTH, soft_wrap=True)
