"""Pass bisect inside ONNX Runtime: the graph transformer (or rewrite rule) that moves the numbers.

A :class:`Probe` is a graph, its feeds and the values it should compute (torch's): the origin's
own nodes fed torch's inputs (``causes.case.origin_case``: a local run costs the origin's nodes
only), or the whole graph against torch's outputs.  ``bisect_ort`` confirms the drift at the
level (one run), lists the transformers that modified this graph at that level (ORT's verbose log,
``ort_passes``), bisects them with ``disabled_optimizers`` (ceil(log2 n) runs), refines a
rule-based transformer into its rewrite rules, and verifies the culprit by disabling it alone (one
run).  ``offline_check`` does the same for a file saved by ORT's offline optimizer: the raw file
optimised again with the culprit disabled, and the drift checked gone.  The tolerance rule is
``metrics.compare``'s (core/tolerance.py): nothing here decides with a rule of its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from drifttui.core.runtime.passes import ort_passes, settings
from drifttui.core.runtime.passes.bisect_core import bisect
from drifttui.core.base.metrics import Stats, compare
from drifttui.core.result import OPT_LEVELS


@dataclass
class Probe:
    payload: Any                              # the graph: serialized bytes or a file path
    feeds: list[dict[str, np.ndarray]]        # per sample
    expected: list[dict[str, np.ndarray]]     # per sample: output name -> torch's value
    atol: float
    rtol: float
    where: str                                # "the origin's nodes (encoder.norm)" / "the model outputs"
    runs: int = 0                             # sessions built and run (the bisect's cost)
    seen: dict = field(default_factory=dict)  # (level, disabled) -> measure's answer: no run twice

    def measure(self, level: str, disabled: Any = ()) -> tuple[bool, float]:
        """(the drift is there, max |d|) with ``disabled`` transformers off at ``level``."""
        key = (level, frozenset(disabled))
        if key not in self.seen:
            self.runs += 1
            sess = ort_passes.session(self.payload, level, disabled)
            self.seen[key] = _compare(sess, self.feeds, self.expected, self.atol, self.rtol)
        return self.seen[key]


def _compare(sess: Any, feeds: list[dict], expected: list[dict], atol: float, rtol: float) -> tuple[bool, float]:
    names = {i.name for i in sess.get_inputs()}
    st = Stats()
    for f, exp in zip(feeds, expected):
        outs = sess.run(list(exp), {k: v for k, v in f.items() if k in names})
        for want, got in zip(exp.values(), outs):
            st.add(compare(want, got, atol, rtol))
    return st.fails(), st.max_abs


@dataclass
class PassResult:
    tool: str                                 # "onnxruntime"
    level: str                                # the level that drifts
    where: str
    culprits: list[str] = field(default_factory=list)
    verified: bool = False                    # the drift is gone with exactly the culprits disabled
    candidates: list[str] = field(default_factory=list)
    runs: int = 0
    error_before: Optional[float] = None      # max |d| at ``level``
    error_after: Optional[float] = None       # max |d| at ``level`` with the culprits disabled
    safe_level: str = ""                      # the highest level that agrees with torch
    settings: dict[str, str] = field(default_factory=dict)
    reason: str = ""                          # why no culprit was named
    reproduced: bool = False                  # the probe drifts at ``level`` with nothing disabled
    offline: Optional[dict[str, Any]] = None  # offline_check's answer

    @property
    def summary(self) -> str:
        if self.culprits and self.verified:
            return (f"ONNX Runtime's {' + '.join(self.culprits)} moves {self.where} at level {self.level} "
                    f"(max |d| {self.error_before:.3g} -> {self.error_after:.3g} with it disabled; "
                    f"{self.runs} local runs)")
        return f"no single ONNX Runtime pass isolated at level {self.level}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("tool", "level", "where", "culprits", "verified", "candidates", "runs",
                                              "error_before", "error_after", "safe_level", "settings", "reason",
                                              "reproduced", "offline")} | {"summary": self.summary}


def bisect_ort(probe: Probe, level: str, safe_level: str = "") -> PassResult:
    """Name the transformer(s) of ``level`` that make ``probe`` drift (see the module doc)."""
    res = PassResult("onnxruntime", level, probe.where, safe_level=safe_level)
    drifts, res.error_before = probe.measure(level)
    res.reproduced = drifts
    if not drifts:
        res.reason = f"at level {level} {probe.where} are within the tolerance"
        return _done(res, probe)
    res.candidates = ort_passes.modified_transformers(probe.payload, level)
    if not res.candidates:
        res.reason = (f"no transformer modified the graph at level {level}: the difference is in the kernels "
                      "ORT runs, not in a graph pass")
        return _done(res, probe)
    found = bisect(lambda d: probe.measure(level, d)[0], res.candidates)
    culprits = [_refine(probe, level, c, [o for o in found.culprits if o != c]) for c in found.culprits]
    res.culprits, res.verified = culprits, found.verified
    if culprits:
        still, res.error_after = probe.measure(level, culprits)
        res.verified = not still
    if not res.verified:
        res.reason = (f"disabling {', '.join(culprits) or 'any one of'} {', '.join(res.candidates)} does not bring "
                      f"{probe.where} back within the tolerance: several passes or ORT's kernels contribute")
    return _done(res, probe)


def _refine(probe: Probe, level: str, culprit: str, others: list[str]) -> str:
    """A level-1 rule-based transformer narrowed to the rewrite rule that does it (when one does)."""
    if not (culprit.endswith(ort_passes.RULE_BASED) and culprit.startswith("Level1")):
        return culprit
    rules = bisect(lambda d: probe.measure(level, d | set(others))[0], ort_passes.RULES)
    return rules.culprits[0] if rules.verified and len(rules.culprits) == 1 else culprit


def _done(res: PassResult, probe: Probe) -> PassResult:
    res.runs = probe.runs
    res.settings = settings.advice(res.safe_level, res.level, res.culprits if res.verified else [])
    return res


def offline_check(raw: Any, probe: Probe, level: str, culprits: list[str], workdir: Path) -> dict[str, Any]:
    """A file saved by ORT's offline optimizer at ``level``: ``raw`` optimised again with and
    without ``culprits`` disabled, each saved file run as it is (level disable) against torch."""
    out: dict[str, Any] = {"level": level, "disabled": list(culprits)}
    for key, disabled in (("as_deployed", ()), ("without", culprits)):
        path = workdir / f"reoptimized_{key}.onnx"
        ort_passes.session(raw, level, disabled, optimized_path=path)
        probe.runs += 1
        sess = ort_passes.session(str(path), "disable")
        fails, max_abs = _compare(sess, probe.feeds, probe.expected, probe.atol, probe.rtol)
        out[key] = {"drifts": fails, "max_abs": max_abs}
    out["drift_gone"] = out["as_deployed"]["drifts"] and not out["without"]["drifts"]
    return out


def drifting_level(rows: dict[str, dict[str, Any]], key: str) -> tuple[str, str]:
    """(the lowest level above disable at which ``key`` fails while disable passes, the highest
    level below it that passes) from an ORT level sweep, or ("", "")."""
    if rows.get("disable", {}).get(key, True):
        return "", ""
    safe = "disable"
    for lv in OPT_LEVELS[1:]:
        if lv not in rows or key not in rows[lv]:
            continue
        if rows[lv][key]:
            return lv, safe
        safe = lv
    return "", ""
