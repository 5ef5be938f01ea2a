"""The cost of a processed file: `drifttui check` on the raw export against its onnxsim / ORT-all copy.

A processed file (one that lost the exporter's metadata) is mapped through a reference export
(core/prepare/reference.py): one more export of the model, a sample-0 run of the reference and one
of the deployed file with every value marked as an output, and the content matching.  Whole
processes, side by side, as a user runs them:

    drifttui check MODEL --inputs SPEC --onnx FILE --samples N --json R

for FILE = the raw dynamo export, its onnxsim copy and its ORT offline ENABLE_ALL copy (made once
up front).  The three processes of a repeat run back to back, the order rotating from repeat to
repeat, ``--repeats`` times; reported are medians of the wall clock and of the report's own
``timings`` (``map``: prepare's mapping, where the reference work lands; ``export``), and the
ratio to the raw file.  The load average is printed first: do not run it on a loaded machine.

    .venv/bin/python benchmarks/bench_processed.py [--models resnet18,transformer] [--samples 3]
                                                   [--repeats 3] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KINDS = ("raw", "onnxsim", "ort-all")


def _spec(name: str) -> tuple[str, str]:
    from benchmarks.models import MODELS

    model, inputs = MODELS[name]
    return str(ROOT / model), inputs


def make_files(name: str, folder: Path) -> dict[str, str]:
    """The raw dynamo export (one self-contained file) and its two processed copies."""
    import onnx
    import onnxruntime as ort
    import onnxsim

    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.model.export import export_model
    from drifttui.core.model.spec import parse_input_spec, parse_model_spec

    model_spec, input_spec = _spec(name)
    model = load_torch_model(parse_model_spec(model_spec))
    args, kwargs = build_source(parse_input_spec(input_spec), 0, False, None).sample(0)
    path = export_model(model, args, kwargs, "dynamo", folder, name=f"{name}-export.onnx")
    raw = folder / f"{name}-raw.onnx"
    onnx.save(onnx.load(str(path)), str(raw))
    sim, ok = onnxsim.simplify(onnx.load(str(raw)))
    assert ok, "onnxsim could not simplify the file"
    onnx.save(sim, str(folder / f"{name}-onnxsim.onnx"))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = str(folder / f"{name}-ort-all.onnx")
    ort.InferenceSession(str(raw), so, providers=["CPUExecutionProvider"])
    return {k: str(folder / f"{name}-{k}.onnx") for k in KINDS}


def _run(name: str, onnx_path: str, samples: int) -> tuple[float, dict, int]:
    model_spec, input_spec = _spec(name)
    with tempfile.TemporaryDirectory(prefix="drifttui-bench-") as d:
        report = Path(d) / "r.json"
        cmd = [sys.executable, "-m", "drifttui", "check", model_spec, "--inputs", input_spec, "--onnx", onnx_path,
               "--samples", str(samples), "--json", str(report)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT))
        wall = time.perf_counter() - t
        data = json.loads(report.read_text()) if report.exists() else {}
    if out.returncode not in (0, 1):
        raise SystemExit(f"drifttui check failed on {onnx_path} (exit {out.returncode}): {out.stderr[-400:]}")
    return wall, data, out.returncode


def measure(name: str, samples: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="drifttui-bench-files-") as d:
        files = make_files(name, Path(d))
        runs: dict[str, list[tuple[float, dict]]] = {k: [] for k in KINDS}
        verdicts: dict[str, str] = {}
        for rep in range(repeats):
            order = KINDS[rep % len(KINDS):] + KINDS[:rep % len(KINDS)]
            for kind in order:
                wall, data, _ = _run(name, files[kind], samples)
                runs[kind].append((wall, data.get("timings", {})))
                cov = data.get("coverage", {})
                verdicts[kind] = (f"{data.get('verdict')}, {cov.get('mapped', 0)} mapped + {cov.get('fused', 0)} fused "
                                  f"of {cov.get('modules', 0)}")
    out = {}
    for kind, rows in runs.items():
        med = {"wall": statistics.median(w for w, _ in rows)}
        for key in ("export", "map", "capture_time", "total"):
            vals = [t.get(key) for _, t in rows if isinstance(t.get(key), (int, float))]
            if vals:
                med[key] = statistics.median(vals)
        out[kind] = {"median_s": med, "walls": [round(w, 2) for w, _ in rows], "result": verdicts[kind]}
    for kind in KINDS:
        out[kind]["ratio_to_raw"] = out[kind]["median_s"]["wall"] / out["raw"]["median_s"]["wall"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet18,transformer")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    try:
        import onnxsim  # noqa: F401
    except ImportError:
        print("onnxsim is not installed (make install-deploy): bench_processed skipped")
        return 0
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cores)")
    results = {}
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        res = measure(name, args.samples, args.repeats)
        results[name] = res
        print(f"\n{name}: drifttui check --samples {args.samples}, medians of {args.repeats}")
        print(f"  {'file':<9} {'wall s':>7} {'x raw':>6} {'map s':>7} {'export s':>9} {'capture s':>9}  runs / result")
        for kind in KINDS:
            r = res[kind]
            m = r["median_s"]
            print(f"  {kind:<9} {m['wall']:7.2f} {r['ratio_to_raw']:6.2f} {m.get('map', float('nan')):7.2f} "
                  f"{m.get('export', float('nan')):9.2f} {m.get('capture_time', float('nan')):9.2f}  {r['walls']} / {r['result']}")
    load = os.getloadavg()
    print(f"\nload average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
