"""Progress reports and cancellation: owned by the engine, re-exported by ``drifttui.api``."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

from drifttui.errors import Cancelled

if TYPE_CHECKING:   # pragma: no cover
    from drifttui.core.result import Result


@dataclass(frozen=True)
class Progress:
    stage: str                 # "load", "export", "map", "observer", "sessions", "samples", "local", "done", "step"
    done: int = 0
    total: int = 0
    message: str = ""
    partial: Optional["Result"] = None   # per-layer results so far (after the first sample)
    eta: Optional[float] = None          # seconds the rest of the stage should take (samples), when known


ProgressFn = Callable[[Progress], None]


class CancelToken:
    """Checked by the engine between samples and between layers."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def no_progress(_: Progress) -> None:
    return None
