"""The cost of explaining a large origin that no patch and no re-export fixes (issue 30).

A Linear stem, then ``body``: 400 ``tanh(x * w_k) + x / 2`` steps (about 2000 ONNX nodes, all
``body``'s own) ending in ``atan2(relu(x), x)``, which both exporters lower to -pi where torch's
``atan2(+0, x < 0)`` is pi; a Linear head; TorchScript file.  Times ``Pipeline.run`` (prepare,
capture: the per-layer passes) against ``Pipeline.explain`` (the causes: the patch budget and the
re-export budget), median of ``--repeats``, side by side as a ratio.  Before issue 30 the explain
tried 201 patches and took 302 s against a 3 s run (class ``dtype`` from the first Cast); with
the budgets it tries 12 patches and the TorchScript re-exports (a 2000-node dynamo export is about
a minute and is left untried, the finding says so).

Session 23 (shared 2-core machine, 3 repeats, medians): a 2013-node origin, 13 trials, 389 patches
and 4 re-exports left untried (said in the finding and its evidence); run 6.4 s, explain 24.5 s,
explain/run 3.8 (the origin's diagnosis costs about four per-layer check passes, not 219 s).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_big_origin.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SPEC = str(Path(__file__).resolve())


def build():
    import torch

    return _model(lambda x: torch.atan2(x.relu(), x))


def build_fixable():
    """The same body ending in ``F.hardsigmoid`` (its exported alpha is dropped by ``main``)."""
    import torch.nn.functional as F

    return _model(F.hardsigmoid)


def _drop_alpha(path: str) -> None:
    """The file's HardSigmoid without its alpha: ONNX's default 0.2 where torch's is 1/6 (a patch fixes it)."""
    import onnx

    proto = onnx.load(path)
    node = next(n for n in proto.graph.node if n.op_type == "HardSigmoid")
    keep = [a for a in node.attribute if a.name != "alpha"]
    del node.attribute[:]
    node.attribute.extend(keep)
    onnx.save(proto, path)


def _model(tail):
    import torch
    from torch import nn

    class Body(nn.Module):
        def __init__(self, n: int = 400) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(n, 32) * 0.1 + 1.0)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for k in range(self.w.shape[0]):
                x = torch.tanh(x * self.w[k]) + x * 0.5
            return tail(x)

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Linear(32, 32)
            self.body = Body()
            self.head = nn.Linear(32, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.body(self.stem(x)))

    torch.manual_seed(0)
    return M().eval()


def inputs():
    import torch

    return torch.randn(6, 32)


def main() -> None:
    import torch

    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--form", choices=("atan2", "hardsigmoid"), default="atan2",
                    help="atan2: nothing fixes it (the budgets); hardsigmoid: a patch verifies (the stop)")
    a = ap.parse_args()
    fn = "build" if a.form == "atan2" else "build_fixable"
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "big.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(globals()[fn](), (inputs(),), path, dynamo=False)
        if a.form == "hardsigmoid":
            _drop_alpha(path)
        cfg = Config(model=f"{SPEC}:{fn}", onnx=path, inputs=f"{SPEC}:inputs", samples=3)
        runs, explains = [], []
        for _ in range(a.repeats):
            engine = Pipeline()
            t0 = time.perf_counter()
            run = engine.run(cfg)
            t1 = time.perf_counter()
            exp = engine.explain(run.result).explanation
            explains.append(time.perf_counter() - t1)
            runs.append(t1 - t0)
        head = exp.findings[0]
        print(f"origin {run.result.drift_origin.module}: {len(exp.case.nodes)} nodes, {len(exp.trials)} trials, "
              f"{exp.skipped} patches and {len(exp.skipped_exports)} re-exports left untried by the budget, "
              f"{getattr(exp, 'not_tried', 0)} not tried (one verified first); head {head.check} "
              f"verified={head.verified}")
        r, e = statistics.median(runs), statistics.median(explains)
        print(f"run {r:.1f} s   explain {e:.1f} s   explain/run {e / r:.1f}")


if __name__ == "__main__":
    main()
