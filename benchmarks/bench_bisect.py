"""What a bisect costs, against the runs it is made of.

* **stage bisect**: ``bisect_stages`` on a k-stage pipeline (raw export -> onnxsim -> ORT offline
  extended, a clean pipeline: nothing to explain) against k plain ``check`` runs of the same files
  (each a fresh Pipeline: export/load, an output pass on every sample, a per-layer pass).  Goal:
  at most the k checks plus one more check's output pass (the comparison of each stage with the one
  before costs one ORT run of each file on every sample).  Reported: the counts the bisect says it
  ran, and the median ratio of the wall times.
* **pass bisect**: ``bisect_ort`` on the origin-sized graph of tests/compose (padconv, level all,
  the NchwcTransformer drift) and on a synthetic pass list: the runs it makes against
  ceil(log2 n) + 2, n the transformers that modified the graph, and its median time against one
  local run (one session built and run at the level).

    .venv/bin/python benchmarks/bench_bisect.py [--repeats 3] [--samples 10] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _stage_bisect(samples: int, repeats: int) -> dict:
    from drifttui.core.compose.stage_bisect import bisect_stages
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from tests.compose import models as M
    from tests.compose import pipelines as P

    d = Path(tempfile.mkdtemp(prefix="bench-bisect-"))
    raw = P.raw("cnn", "torchscript", d)
    sim = P.onnxsim(raw, d / "sim.onnx")
    ext = P.ort_offline("extended", sim, d / "ext.onnx")
    stages = [str(raw), str(sim), str(ext)]
    cfg = Config(model=M.spec("cnn"), inputs=M.INPUTS["cnn"], samples=samples, exporter="torchscript")
    ratios, t_b, t_c, counts = [], [], [], {}
    import dataclasses

    for _ in range(repeats):
        t = time.perf_counter()
        for i, s in enumerate(stages):
            Pipeline().run(dataclasses.replace(cfg, onnx=s, reference_onnx=stages[0] if i else None))
        checks = time.perf_counter() - t
        t = time.perf_counter()
        res = bisect_stages(cfg, stages, explain=False)
        bis = time.perf_counter() - t
        counts = res.counts
        t_b.append(bis)
        t_c.append(checks)
        ratios.append(bis / checks)
    k = len(stages)
    out_pass = _output_pass_s(cfg, stages[-1], repeats)
    extra = statistics.median(b - c for b, c in zip(t_b, t_c))
    allowance = max(out_pass, 0.02 * statistics.median(t_c))     # 2%: the wall clock's noise between repeats
    return {"stages": k, "samples": samples, "counts": counts, "bisect_s": statistics.median(t_b),
            "checks_s": statistics.median(t_c), "ratio_median": statistics.median(ratios),
            "extra_over_checks_s": extra, "one_output_pass_s": out_pass,
            "goal": f"{counts.get('output_passes')} checks' output passes and {counts.get('per_layer_passes')} "
                    f"per-layer passes (one each per stage) + {counts.get('ort_runs')} ORT runs of the stages "
                    f"(the comparison with the previous stage): the time over the {k} checks <= one output pass",
            "ok": counts.get("per_layer_passes", 0) <= k and counts.get("output_passes", 0) <= k
            and extra <= allowance}


def _output_pass_s(cfg, stage: str, repeats: int) -> float:
    """One output pass as a check runs it: an ORT run and a torch forward on every sample."""
    import dataclasses

    from drifttui.core.pipeline import Pipeline
    from drifttui.core.runtime.passes import ort_passes
    from drifttui.core.runtime.torch_hooks import run_model

    pr = Pipeline().run(dataclasses.replace(cfg, onnx=stage)).prepared
    src = pr.source(cfg.seed, False)
    sess = ort_passes.session(stage, cfg.output_opt_level, deterministic=False)
    names = {i.name for i in sess.get_inputs()}
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for i in range(cfg.samples):
            smp = src.sample(i)
            sess.run(None, {a: b for a, b in pr.feeds(smp).items() if a in names})
            run_model(pr.model, *smp)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _pass_bisect(repeats: int) -> dict:
    from drifttui.core.runtime.passes.bisect_core import bisect
    from tests.compose import pipelines as P
    from tests.compose.test_pass_bisect import _probe
    from drifttui.core.runtime.passes.pass_bisect import bisect_ort

    d = Path(tempfile.mkdtemp(prefix="bench-pass-"))
    src = P.raw("padconv", "torchscript", d)
    times, one, runs, n = [], [], 0, 0
    for _ in range(repeats):
        probe = _probe(src)
        t = time.perf_counter()
        probe.measure("all")
        one.append(time.perf_counter() - t)
        probe = _probe(src)
        t = time.perf_counter()
        res = bisect_ort(probe, "all", "extended")
        times.append(time.perf_counter() - t)
        runs, n = res.runs, len(res.candidates)
    synthetic = {}
    for size in (8, 31, 64):
        names = [f"p{i}" for i in range(size)]
        s = bisect(lambda off: names[size // 3] not in off, names)
        synthetic[size] = {"runs": s.runs + 1, "bound": math.ceil(math.log2(size)) + 2}
    bound = math.ceil(math.log2(max(n, 2))) + 2
    return {"candidates": n, "runs": runs, "bound": bound, "ok": runs <= bound,
            "bisect_s": statistics.median(times), "one_local_run_s": statistics.median(one),
            "ratio_to_one_run": statistics.median(times) / statistics.median(one), "synthetic": synthetic}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    out = {"pass_bisect": _pass_bisect(a.repeats), "stage_bisect": _stage_bisect(a.samples, a.repeats)}
    text = json.dumps(out, indent=2, default=str)
    print(text)
    if a.json:
        Path(a.json).write_text(text + "\n")
    return 0 if out["pass_bisect"]["ok"] and out["stage_bisect"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
