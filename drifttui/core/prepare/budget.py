"""The memory budget of a run: ``--max-memory`` bounds the whole process, by default a share of
the memory the machine has available.

What the run holds besides the captured intermediates is measured, not guessed, where it can
be: the process's resident memory when the windows are planned (Python, torch, the torch model,
the trace) plus what ONNX Runtime adds for the weights, one copy of the ONNX file's weights
(the per-layer sessions share one mapping of the file, see ``runtime.weights``; the output pass's
session packs its own copy from the file, freeing each raw weight once packed, while the mapping's
pages are given back, and it is closed before the worst samples' per-layer passes: the two are never
resident together), plus a margin for the runtimes' own buffers.  Measured on the 220M LLaMA:
1.23 GB when planned + 0.88 GB of weights + the margin = 2.37 GB; its peak was 2.30 GB.  (Counting
the weights twice, as before that order, put a 1B model's 11 GB limit below the fixed costs and
captured its 190 layers one window each.)  What remains of
the limit is the budget of one sample's intermediates, both sides, which ``windows.plan_windows``
splits the layers by.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from drifttui.core.base.units import human

DEFAULT_SHARE = 0.8          # of the memory available when the run starts
MARGIN = 256 << 20           # ORT's arena, torch's allocator, the output pass's activations


@dataclass(frozen=True)
class Budget:
    limit: Optional[int]             # bytes for the whole process; None: unknown (no limit applied)
    fixed: int                       # what the run holds besides the intermediates (estimate)
    activations: Optional[int]       # one sample's intermediates, both sides; None: no limit
    given: bool                      # --max-memory (else the default from the available memory)
    notes: list[str] = field(default_factory=list)


def rss_bytes() -> int:
    """This process's resident memory now (Linux ``/proc``; elsewhere its peak so far)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def available_bytes() -> Optional[int]:
    """The memory the machine can give without swapping (``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def weight_bytes(index: Any) -> int:
    """Bytes of the ONNX graph's initializers (external or embedded)."""
    import numpy as np
    from onnx import helper

    total = 0
    for t in index.initializers.values():
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
        except Exception:     # noqa: BLE001 - string or unknown types: their bytes as stored
            itemsize = 1
        count = 1
        for d in t.dims:
            count *= int(d)
        total += count * itemsize
    return total


def fixed_bytes(index: Any) -> int:
    """What the process holds besides one sample's intermediates (see the module doc)."""
    return rss_bytes() + weight_bytes(index) + MARGIN


def plan_budget(max_memory: Optional[int], index: Any, hooked: bool) -> Budget:
    """The budget for ``max_memory`` (None: the default), with the notes that say what it is."""
    fixed = fixed_bytes(index)
    if max_memory is not None:
        notes = []
        if hooked and max_memory <= fixed:
            notes.append(f"--max-memory {human(max_memory)} is below what this run holds besides the captured "
                         f"values (~{human(fixed)}: the process so far, ONNX Runtime's copies of the weights and "
                         "a margin): layers were captured one at a time, the least drifttui can hold, and the "
                         "peak will be above the limit")
        return Budget(max_memory, fixed, max(1, max_memory - fixed), True, notes)
    available = available_bytes()
    if available is None:
        return Budget(None, fixed, None, False)
    limit = rss_bytes() + int(available * DEFAULT_SHARE)
    return Budget(limit, fixed, max(1, limit - fixed), False)


def window_note(b: Budget, windows: int, total_bytes: int) -> str:
    """The note for a capture split into ``windows`` windows by ``b``."""
    what = f"--max-memory {human(b.limit or 0)}" if b.given else \
        f"the memory budget {human(b.limit or 0)} ({DEFAULT_SHARE:.0%} of the memory available at start; " \
        "--max-memory sets it)"
    return (f"captured in {windows} windows of consecutive layers to stay within {what} (the run holds "
            f"~{human(b.fixed)} besides the captured values; one sample's intermediates, both sides: "
            f"~{human(total_bytes)}); each window costs one ORT run and one torch forward per per-layer sample")


def window_notes(max_memory: Optional[int], hooked: bool, windows: list[Any], budget: Optional[int],
                 total_bytes: int, mem: Budget) -> list[str]:
    """What the run says about its capture windows and the memory budget."""
    out = []
    if len(windows) > 1:
        out.append(window_note(mem, len(windows), total_bytes))
    if max_memory is not None and not hooked:
        out.append("--max-memory was not applied: windowed capture needs module hooks")
    big = [w for w in windows if budget is not None and w.nbytes > budget]
    if big:
        listed = ", ".join(str(w.first) for w in big[:10]) + (f" and {len(big) - 10} more" if len(big) > 10 else "")
        out.append(f"layer(s) {listed} alone exceed the memory budget; they were captured on their own")
    return out
