"""The cost of localising a dynamo file's origin against torch (``causes/fx_localise.py``).

A Linear stem, then ``body``: a ``TransformerEncoderLayer`` (d_model 256, 4 heads, ffn 1024; about
40 ONNX nodes once exported by dynamo) followed by a small-x ``log1p`` (lowered to ``Log(1 + x)``,
the drift) and a Linear head; batch 4 x 32 tokens.  Timed inside one process, on the explain
context of a real run: ``localise`` (ORT + the reference evaluator on the origin's nodes, what
every file gets) against ``fx_localise`` cold (torch.export + decomposition of the origin module,
its FX graph run, each FX node's ONNX nodes run alone in ORT) and warm (the exported program
cached: what a fresh sample's check costs).  Medians of ``--repeats``.

    .venv/bin/python benchmarks/bench_fx_localise.py [--repeats 5]
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


def build():
    import torch
    from torch import nn

    class Body(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
            self.head = nn.Linear(256, 256)

        def forward(self, x):
            y = self.layer(x)
            return torch.tanh(self.head(torch.log1p(y.abs() * 1e-5) * 1e5))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Linear(256, 256)
            self.body = Body()

        def forward(self, x):
            return self.body(self.stem(x))

    torch.manual_seed(0)
    return Model().eval()


def inputs():
    import torch

    return (torch.randn(4, 32, 256),)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    import torch

    from drifttui.core.explain.causes.locate.case import origin_case
    from drifttui.core.explain.causes.locate.evaluate import localise
    from drifttui.core.explain.causes.locate.fx_localise import fx_localise
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    spec = Path(__file__).resolve()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.onnx"
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(build(), inputs(), str(path), dynamo=True)
        cfg = Config(model=f"{spec}:build", onnx=str(path), inputs=f"{spec}:inputs", samples=3)
        engine = Pipeline()
        run = engine.run(cfg)
        ctx = engine.context(run.result)
        case = origin_case(ctx)
        print(f"origin {case.module!r}: {len(case.model.graph.node)} ONNX nodes")
        times: dict[str, list[float]] = {"localise": [], "fx cold": [], "fx warm": []}
        for _ in range(a.repeats):
            t = time.perf_counter()
            localise(case)
            times["localise"].append(time.perf_counter() - t)
            for k in [k for k in ctx.cache if k.startswith("causes:fx:")]:
                del ctx.cache[k]
            t = time.perf_counter()
            fx = fx_localise(ctx, case)
            times["fx cold"].append(time.perf_counter() - t)
            t = time.perf_counter()
            fx_localise(ctx, case)
            times["fx warm"].append(time.perf_counter() - t)
        w = fx.wrong
        print(f"matched {fx.matched} FX values, {len(fx.groups)} FX nodes run alone; wrong: "
              f"{w.target if w else None} {w.nodes if w else ''} (amplified {fx.amplified})")
        base = statistics.median(times["localise"])
        for k, v in times.items():
            m = statistics.median(v)
            print(f"{k:9s} median {m * 1000:8.1f} ms  ({m / base:.2f} x localise)")


if __name__ == "__main__":
    main()
