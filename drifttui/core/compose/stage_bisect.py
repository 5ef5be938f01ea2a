"""Stage bisect: which file of a deployment pipeline (export -> simplifier -> ORT's offline
optimizer -> float16 / int8) first drifts, its origin and its cause.

``bisect_stages(config, stages)`` checks torch against every stage's file (one ``check`` each,
on the same samples: the config's seed), every stage after the first mapped through the first
(``--reference-onnx``: its module map), and each stage's outputs against the stage before it.
A reduced-precision stage is judged by its precision budget, as ``check`` judges it: every verdict
here is ``core.decide``'s.  The first stage whose check fails is named with its origin and the
top verified finding; when optimising the previous stage with ORT at some level reproduces the
drift, the pass bisect names the transformer and re-optimises the previous file without it
(``pass_bisect.offline_check``); when running onnxsim / onnxslim on it does, ``sim_passes``
names their pass.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from drifttui.core.compose import sim_passes
from drifttui.core.base.metrics import Stats, compare
from drifttui.core.pipeline import Pipeline, Run
from drifttui.core.base.progress import CancelToken, Progress, ProgressFn, no_progress
from drifttui.core.result import OK, Config, Result, display_name
from drifttui.core.runtime.passes import ort_passes
from drifttui.core.runtime.passes.pass_bisect import PassResult, Probe, bisect_ort, offline_check
from drifttui.core.runtime.torch_hooks import run_model, to_numpy
from drifttui.errors import InputError

ORT_LEVELS_TRIED = ("basic", "extended", "all")


@dataclass
class StageRow:
    index: int
    path: str
    result: Result                               # torch vs this stage, decided by core.decide
    vs_previous: Optional[dict[str, Any]] = None  # outputs vs the stage before (None for the first)

    @property
    def drifts(self) -> bool:
        return self.result.verdict != OK

    def to_dict(self) -> dict[str, Any]:
        o = self.result.drift_origin
        return {"index": self.index, "path": self.path, "verdict": self.result.verdict,
                "origin": display_name(o.module) if o is not None else None,
                "outputs_max_abs": max((x.metrics.max_abs.worst for x in self.result.outputs), default=None),
                "precision": self.result.precision.format if self.result.precision is not None else "float32",
                "vs_previous": self.vs_previous}


@dataclass
class StageBisect:
    stages: list[StageRow] = field(default_factory=list)
    first: Optional[int] = None                  # the first stage whose check fails
    origin: Optional[str] = None
    cause: str = ""
    passes: Optional[PassResult] = None          # the ORT pass that reproduces the first drift
    sim: Optional[dict[str, Any]] = None         # the onnxsim / onnxslim pass that does
    counts: dict[str, int] = field(default_factory=dict)   # output passes, per-layer passes, pass runs

    @property
    def summary(self) -> str:
        if self.first is None:
            budgeted = [f"stage {s.index} {s.result.precision.format}" for s in self.stages
                        if s.result.precision is not None and s.result.precision.output_budget > 0]
            return (f"no stage drifts: all {len(self.stages)} files agree with torch"
                    + (f" ({', '.join(budgeted)}: within its precision budget)" if budgeted else ""))
        where = f"stage {self.first} ({Path(self.stages[self.first].path).name})"
        text = f"the drift first appears at {where}"
        if self.origin:
            text += f": origin {self.origin}"
        if self.cause:
            text += f"; {self.cause}"
        if self.passes is not None and self.passes.culprits and self.passes.verified:
            text += f"; {self.passes.summary}"
        if self.sim and self.sim.get("culprit"):
            text += f"; {self.sim['tool']}'s pass {self.sim['culprit']} reproduces it"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "first": self.first, "origin": self.origin, "cause": self.cause,
                "stages": [s.to_dict() for s in self.stages], "counts": self.counts,
                "pass": self.passes.to_dict() if self.passes is not None else None, "sim": self.sim}


def validate_stages(stages: list[str]) -> None:
    if len(stages) < 2:
        raise InputError("--stages needs at least two files (the raw export first, the deployed file last)",
                         "give --stages RAW.onnx [STEP.onnx ...] DEPLOYED.onnx")
    for s in stages:
        if not Path(s).is_file():
            raise InputError(f"stage file {s} does not exist", "give the ONNX files of the pipeline, in order")


def bisect_stages(config: Config, stages: list[str], progress: ProgressFn = no_progress,
                  cancel: Optional[CancelToken] = None, explain: bool = True) -> StageBisect:
    """Torch vs every stage, each stage vs the one before, the first drifting stage explained."""
    validate_stages(stages)
    cancel = cancel or CancelToken()
    out = StageBisect(counts={"output_passes": 0, "per_layer_passes": 0, "ort_runs": 0, "pass_runs": 0})
    prev_outs: Optional[list[list[np.ndarray]]] = None
    for i, path in enumerate(stages):
        progress(Progress("stage", i, len(stages), f"stage {i}: {Path(path).name}"))
        cfg = dataclasses.replace(config, onnx=str(path), reference_onnx=str(stages[0]) if i else None)
        pipe = Pipeline()
        run = pipe.run(cfg, progress, cancel)
        out.counts["output_passes"] += 1
        out.counts["per_layer_passes"] += 1
        outs = _stage_outputs(run, cfg)
        out.counts["ort_runs"] += 1
        row = StageRow(i, str(path), run.result, _vs(prev_outs, outs, cfg, run.result) if prev_outs is not None else None)
        out.stages.append(row)
        prev_outs = outs
        if row.drifts and out.first is None:
            out.first = i
            _explain_first(out, pipe, run, stages, cfg, explain, cancel)
    return out


def _stage_outputs(run: Run, cfg: Config) -> list[list[np.ndarray]]:
    """This stage's outputs on every sample of the check (the level its output pass runs at)."""
    pr = run.prepared
    sess = ort_passes.session(str(cfg.onnx), cfg.output_opt_level, deterministic=cfg.deterministic)
    names = {i.name for i in sess.get_inputs()}
    src = pr.source(cfg.seed, cfg.zero_input)
    n = 1 if src.fixed else cfg.samples
    res = []
    for k in range(n):
        feeds = {a: b for a, b in pr.feeds(src.sample(k)).items() if a in names}
        res.append(sess.run(None, feeds))
    return res


def _vs(prev: list[list[np.ndarray]], cur: list[list[np.ndarray]], cfg: Config,
        result: Optional[Result] = None) -> dict[str, Any]:
    """The stage's outputs against the stage before it (the previous file plays torch's role), judged as the
    stage's own check judges its outputs: a reduced-precision stage by its outputs' precision budget (``judged``
    says which: the line and the verdict use one rule)."""
    if len(prev) != len(cur) or any(len(a) != len(b) for a, b in zip(prev, cur)):
        return {"compared": False, "why": "the two files have different outputs"}
    st = Stats()
    for a, b in zip(prev, cur):
        for x, y in zip(a, b):
            st.add(compare(x, y, cfg.atol, cfg.rtol))
    p = result.precision if result is not None else None
    budget = p.output_budget if p is not None and p.output_budget > cfg.rtol else 0.0
    judged = (f"the {p.format} output budget {budget:.2g} of the outputs' scale" if budget and p is not None
              else f"the tolerance atol {cfg.atol:g}, rtol {cfg.rtol:g}")
    fails = st.fails_at(cfg.atol, budget) if budget else st.fails()
    return {"compared": True, "max_abs": st.max_abs, "max_rel": st.max_rel, "fails": fails, "judged": judged}


def _explain_first(out: StageBisect, pipe: Pipeline, run: Run, stages: list[str], cfg: Config,
                   explain: bool, cancel: CancelToken) -> None:
    o = run.result.drift_origin
    out.origin = display_name(o.module) if o is not None else None
    if explain:
        ex = pipe.explain(run.result, (), cancel=cancel)
        top = next((f for f in ex.result.findings if f.verified), None) or \
            next((f for f in ex.result.findings if f.severity == "error"), None)
        if top is not None:
            out.cause = f"{top.check}: {top.message}" + (" [verified]" if top.verified else "")
    own = _outputs_probe(run, stages[out.first], cfg)
    if cfg.output_opt_level != "disable" and not own.measure("disable")[0] and own.measure(cfg.output_opt_level)[0]:
        # the file is clean as written: ONNX Runtime's session optimizer moves it at run time
        safe = "disable"
        for level in ORT_LEVELS_TRIED:
            if own.measure(level)[0]:
                out.passes = bisect_ort(own, level, safe)
                break
            safe = level
        out.counts["pass_runs"] = own.runs
        return
    if out.first == 0:
        return
    prev = stages[out.first - 1]
    probe = _outputs_probe(run, prev, cfg)
    work = Path(tempfile.mkdtemp(prefix="drifttui-stages-"))
    try:
        _which_tool(out, stages[out.first], prev, probe, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out.counts["pass_runs"] = probe.runs


def _which_tool(out: StageBisect, stage: str, prev: str, probe: Probe, work: Path) -> None:
    """Which tool made the drifting stage from the one before: the simplifier its metadata names
    (onnxsim writes ``onnxsim.*`` keys), ORT when the file holds ORT's own ops, else the installed
    simplifiers, then ORT's levels (the first that reproduces the drift from the previous file)."""
    import onnx

    model = onnx.load(stage, load_external_data=False)
    keys = {p.key.split(".")[0] for p in model.metadata_props}
    ort_ops = any(n.domain.startswith("com.microsoft") for n in model.graph.node)
    order = (["onnxsim"] if "onnxsim" in keys else []) + (["ort"] if ort_ops else []) + ["onnxslim", "onnxsim", "ort"]
    if probe.measure("disable")[0]:
        return                               # the previous file drifts on its own at disable
    for tool in dict.fromkeys(order):
        if tool == "ort":
            out.passes = _ort_reproduce(probe, prev, work)
            found = out.passes is not None
        else:
            out.sim = sim_passes.reproduce(prev, probe, work, only=tool)
            found = out.sim is not None
        if found:
            return


def _outputs_probe(run: Run, prev: str, cfg: Config) -> Probe:
    """The previous stage's file against torch's outputs on up to 2 samples."""
    pr = run.prepared
    src = pr.source(cfg.seed, cfg.zero_input)
    n = 1 if src.fixed else min(2, cfg.samples)
    samples = [src.sample(k) for k in range(n)]
    feeds = [pr.feeds(s) for s in samples]
    names = [o.name for o in ort_passes.session(prev, "disable").get_outputs()]
    expected = [dict(zip(names, (to_numpy(t) for t in run_model(pr.model, *s)))) for s in samples]
    return Probe(prev, feeds, expected, cfg.atol, cfg.rtol, "the model outputs")


def _ort_reproduce(probe: Probe, prev: str, work: Path) -> Optional[PassResult]:
    """The previous stage optimised by ORT at the lowest level that drifts like this stage: the pass
    that does it, and the previous file re-optimised without it (None: ORT does not reproduce it)."""
    safe = "disable"
    for level in ORT_LEVELS_TRIED:
        if not probe.measure(level)[0]:
            safe = level
            continue
        res = bisect_ort(probe, level, safe)
        if res.culprits and res.verified:
            res.offline = offline_check(prev, probe, level, res.culprits, work)
        res.runs = probe.runs
        return res
    return None
