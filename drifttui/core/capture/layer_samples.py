"""Which samples get the per-layer pass (``--layer-samples``): sample 0 and the samples with the
largest output error, chosen after the output pass has seen every sample (never by a tolerance)."""
from __future__ import annotations

import heapq
import math

LAYER_SAMPLES = ("auto", "all")           # or a positive number K, as text
AUTO_LAYER_SAMPLES = 3                    # "auto": sample 0 and the two worst other samples


def layer_sample_count(value: str, n: int) -> int:
    """How many of ``n`` samples get the per-layer pass for a ``--layer-samples`` value."""
    if value == "all":
        return n
    k = AUTO_LAYER_SAMPLES if value == "auto" else int(value)
    return max(1, min(n, k))


def valid_layer_samples(value: str) -> bool:
    return value in LAYER_SAMPLES or (value.isdecimal() and value.isascii() and int(value) >= 1)


def keep_worst(heap: list[tuple[float, int]], key: float, i: int, size: int) -> None:
    """Keep the ``size`` largest output errors seen (ties: the earlier sample)."""
    if size <= 0:
        return
    item = (key if key == key else math.inf, -i)          # a NaN error counts as the worst
    if len(heap) < size:
        heapq.heappush(heap, item)
    elif item > heap[0]:
        heapq.heapreplace(heap, item)
