"""The cost of the derived precision budget (``core/capture/rounding.py``) against the capture it is part of.

Each reduced-precision file is prepared once; then ``--repeats`` captures, each timing the recomputation of
every budgeted leaf module in the file's precision (one hooked forward of sample 0: timings' ``rounding``)
and the whole capture.  Medians side by side, and their ratio.  Files: the seeded zoo's GPT-2 and BERT
(dynamo) through ORT's float16 converter and ``quantize_dynamic`` (reduce_range), 3 samples.

    .venv/bin/python benchmarks/bench_rounding.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "archs"))

CASES = [("gpt2", "token_ids", "fp16"), ("gpt2", "token_ids", "int8"), ("bert", "tokens", "fp16"),
         ("bert", "tokens", "int8")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    __import__("zoo")
    from drifttui.core.capture.stage import capture
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config
    from tests.deploy.precision_models import export, fp16_ort, int8_dynamic, spec

    print(f"{'file':22s} {'rounding s':>11s} {'capture s':>10s} {'share':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        for fn, inputs, conv in CASES:
            d = Path(tmp) / f"{fn}_{conv}"
            raw = export(fn, inputs, "dynamo", d / "raw")
            path = fp16_ort(raw, d / "f.onnx") if conv == "fp16" else int8_dynamic(raw, d / "q.onnx",
                                                                                   reduce_range=True)
            cfg = Config(model=spec(fn), inputs=spec(inputs), onnx=str(path), samples=3)
            pr = prepare(cfg)
            rounding, total = [], []
            for _ in range(args.repeats):
                cap = capture(pr, cfg)
                rounding.append(cap.timings.get("rounding", 0.0))
                total.append(sum(v for k, v in cap.timings.items() if k in ("observer", "samples", "sessions",
                                                                            "shares", "rounding")))
            r, t = statistics.median(rounding), statistics.median(total)
            print(f"{fn + ' ' + conv:22s} {r:11.3f} {t:10.3f} {r / t:7.1%}")


if __name__ == "__main__":
    main()
