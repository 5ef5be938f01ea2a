"""How close a deployed value is to a reference value: the one measure of the pairing (matching.py,
activations.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

EQUAL_RTOL = 1e-4          # a deployed value equals a reference value: max|d - r| <= EQUAL_RTOL * max|r|


@dataclass
class Match:
    value: str                 # deployed value
    err: float                 # max|d - r| / max|r| on sample 0
    exact: bool
    perm: Optional[tuple] = None   # the deployed value is the reference's transposed: compare Transpose(value, perm)


def err(a: np.ndarray, b: np.ndarray, scale: float) -> float:
    return float(np.max(np.abs(a.astype(np.float64).reshape(-1) - b.astype(np.float64).reshape(-1)),
                        initial=0.0)) / max(scale, 1e-12)


def is_blank(a: np.ndarray) -> bool:
    """A value of one number in every element (PoolFormer's token mixer ``pool(x) - x`` on 1x1 maps: all 0):
    equal to it says nothing, so only a value computed from the same anchors may carry it, never one that
    lost some (an optimiser's dropped Add of zeros): the first block's zeros would stand for every block's."""
    return a.size > 1 and not bool(np.any(a != a.flat[0]))
