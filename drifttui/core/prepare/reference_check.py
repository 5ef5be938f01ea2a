"""Is a ``--reference-onnx`` a reference of the deployed file at all? (issue 34, item 2)

A reference of another model, or one whose weights match none of the deployed file's, mapped the
deployed file to nothing: the origin became ``(root)`` and the modules "not exported", with a hint
at the end of a note.  Now:

- a reference whose weights match none of the deployed file's (by content: equal, transposed, a
  rounded or quantized copy, blocks of a packed tensor) is an InputError naming the mismatch;
- one that matches only part of them is said under the headline (``ALERT``), with the share;
- a reference that is the ``--onnx`` file itself (the same file, or the same bytes) is said as such,
  and the file is mapped as if no reference had been given.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from drifttui.errors import InputError

# notes starting with this are said under the verdict in every report (report/summary.alerts)
ALERT = "--reference-onnx "
PARTIAL = 0.99          # below this share of the deployed weights' elements, a reference is partial


@dataclass(frozen=True)
class Share:
    matched: int         # deployed weights (informative float / quantized tensors) matched by content
    total: int
    matched_elements: int
    total_elements: int

    @property
    def fraction(self) -> float:
        return self.matched_elements / self.total_elements if self.total_elements else 1.0

    def text(self) -> str:
        return (f"{self.matched} of {self.total} weights of the deployed file "
                f"({100 * self.fraction:.0f}% of their elements)")


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def same_as_onnx(cfg: Any) -> str:
    """The note when ``--reference-onnx`` is the ``--onnx`` file itself ("" otherwise)."""
    ref, dep = getattr(cfg, "reference_onnx", None), cfg.onnx
    if not ref or not dep:
        return ""
    try:
        same = os.path.samefile(ref, dep) or (os.path.getsize(ref) == os.path.getsize(dep)
                                              and _digest(ref) == _digest(dep))
    except OSError:
        return ""
    if not same:
        return ""
    return (f"{ALERT}is the --onnx file itself ({os.path.basename(ref)!r}): a reference is the raw export the "
            "deployed file was made from, so it adds nothing here; the file is mapped as if no reference were "
            "given (drop --reference-onnx, or give the raw export)")


def weight_share(anchors: dict[str, str], packed: dict[str, list[str]], dep_weights: dict[str, Any]) -> Share:
    """How many of the deployed file's weights (``dep_weights``: name -> array) the reference's match."""
    hit = set(anchors) | set(packed)
    sizes = {n: int(getattr(a, "size", 0)) for n, a in dep_weights.items()}
    return Share(len(hit & set(sizes)), len(sizes), sum(s for n, s in sizes.items() if n in hit), sum(sizes.values()))


def check_share(share: Share, given: str, onnx: str) -> str:
    """InputError when no weight matches; the alert note when only part of them do ("" when all do)."""
    name, dep = os.path.basename(given), os.path.basename(onnx or "")
    if share.total and not share.matched:
        raise InputError(f"--reference-onnx {name!r} is not a reference of --onnx {dep!r}: none of the deployed "
                         f"file's {share.total} weights is among the reference's (matched by content: equal, "
                         "transposed, rounded or quantized)",
                         "give the raw export of the model the --onnx file was made from, or drop --reference-onnx")
    if share.fraction < PARTIAL:
        return (f"{ALERT}{name!r} matches only part of --onnx {dep!r}: {share.text()} matched by content; "
                "the layers whose weights are not the reference's are mapped by structure only or not at all "
                "(a reference of another checkpoint or another model?)")
    return ""
