"""Capture at the floor: the marginal cost of one more sample in `drifttui check` against the floor.

Whole processes, side by side, as a new user runs them:

* drifttui: ``drifttui check MODEL --inputs SPEC --onnx FILE --samples N`` with default settings
  (the ONNX file is exported once up front so that each process does not spend its time exporting;
  the per-sample path is the one a user gets with or without ``--onnx``).
* the floor (the issue's): a plain script that loads the same model and file and, per sample,
  runs one torch forward (``inference_mode``) and one ONNX Runtime run at ORT's DEFAULT
  optimisation level (``ORT_ENABLE_ALL``) with idle threads not spinning
  (``session.intra_op.allow_spinning=0`` and inter-op), on the same samples drifttui draws.
* the strict floor: the same script, but all torch forwards first and then all ORT runs, so that
  neither runtime's threads ever wait behind the other's (on 2 cores, torch's OpenMP workers still
  spin when ORT starts).  It is the lowest cost of "one torch forward plus one ORT run".

Each is run at N1 and N2 samples; the marginal cost is (T(N2) - T(N1)) / (N2 - N1), wall clock
of the whole process, so imports, export, mapping and session set-up cancel out.  The six
processes of a repeat run interleaved (N1 and N2 of each kind back to back, the order of the
kinds rotating from repeat to repeat), ``--repeats`` times; reported are medians.  Memory: peak
RSS (ru_maxrss) of drifttui at N2 against N1 samples (flat: it streams), and against the floor.

    .venv/bin/python benchmarks/bench_engine.py [--models resnet18,transformer] [--n1 10] [--n2 N]
                                                [--repeats 5] [--json PATH]
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
SPEED_GOAL = 1.25
MEMORY_GOAL = 1.2
# N2 per model unless --n2 is given: about 10 s of per-sample signal (the transformer's samples are
# ~30 ms, and a process's fixed cost varies by a second or more between runs)
N2_DEFAULT = {"resnet18": 110, "transformer": 310}


def _spec(name: str) -> tuple[str, str]:
    from benchmarks.models import MODELS

    model, inputs = MODELS[name]
    return str(ROOT / model), inputs


def child_floor(name: str, onnx_path: str, samples: int, strict: bool = False) -> dict:
    """The floor: plain torch forward + plain ORT run (default level, no spinning) per sample;
    ``strict``: every torch forward first, then every ORT run (no interference between the two)."""
    import resource

    import onnxruntime as ort
    import torch

    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.model.spec import parse_input_spec, parse_model_spec

    model_spec, input_spec = _spec(name)
    model = load_torch_model(parse_model_spec(model_spec))
    source = build_source(parse_input_spec(input_spec), 0, False, None)
    so = ort.SessionOptions()             # ORT's defaults: graph_optimization_level ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    if strict:                 # each sample drawn once, as in the interleaved floor (kept for the ORT loop)
        xs = []
        for i in range(samples):
            xs.append(source.sample(i)[0][0])
            with torch.inference_mode():
                model(xs[-1])
        for x in xs:
            sess.run(None, {in_name: x.numpy()})
    else:
        for i in range(samples):
            x = source.sample(i)[0][0]
            with torch.inference_mode():
                model(x)
            sess.run(None, {in_name: x.numpy()})
    return {"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child_strict(name: str, onnx_path: str, samples: int) -> dict:
    return child_floor(name, onnx_path, samples, strict=True)


def child_drifttui(name: str, onnx_path: str, samples: int) -> dict:
    import contextlib
    import io
    import resource

    from drifttui.cli import main

    model_spec, input_spec = _spec(name)
    with tempfile.TemporaryDirectory(prefix="drifttui-bench-") as d:
        report = Path(d) / "r.json"
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["check", model_spec, "--inputs", input_spec, "--onnx", onnx_path, "--samples", str(samples),
                         "--json", str(report)])
        timings = json.loads(report.read_text()).get("timings", {}) if report.exists() else {}
    return {"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "exit": code,
            "timings": timings}


def child_paired(name: str, onnx_path: str, samples: int) -> dict:
    """In one process: after each drifttui sample (progress callback), the floor on the same sample.

    Robust on a loaded machine (the noise hits both halves of a pair); the ratio per sample is
    drifttui's time between two callbacks over the floor's torch forward + ORT run; median."""
    import onnxruntime as ort
    import torch

    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from drifttui.core.model.spec import parse_input_spec, parse_model_spec

    model_spec, input_spec = _spec(name)
    model = load_torch_model(parse_model_spec(model_spec))
    source = build_source(parse_input_spec(input_spec), 0, False, None)
    so = ort.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    state = {"last": None}
    pairs: list[tuple[float, float]] = []

    def progress(p) -> None:
        now = time.perf_counter()
        if p.stage != "samples":
            return
        if state["last"] is not None:
            x = source.sample(p.done - 1)[0][0]
            t = time.perf_counter()
            with torch.inference_mode():
                model(x)
            sess.run(None, {in_name: x.numpy()})
            pairs.append((now - state["last"], time.perf_counter() - t))
        state["last"] = time.perf_counter()

    result = run_once(Config(model=model_spec, inputs=input_spec, onnx=onnx_path, samples=samples),
                      progress=progress).result
    ratios = [d / f for d, f in pairs[1:]]          # the first pair also builds the first partial
    return {"ratio": statistics.median(ratios), "drifttui_ms": statistics.median(d for d, _ in pairs[1:]) * 1e3,
            "floor_ms": statistics.median(f for _, f in pairs[1:]) * 1e3, "pairs": len(ratios),
            "layer_samples": result.layers[0].metrics.samples if result.layers[0].metrics else None}


def _export(name: str, workdir: Path) -> str:
    from drifttui.core.model.export import export_model
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.model.spec import parse_input_spec, parse_model_spec

    model_spec, input_spec = _spec(name)
    model = load_torch_model(parse_model_spec(model_spec))
    sample = build_source(parse_input_spec(input_spec), 0, False, None).sample(0)
    return str(export_model(model, sample[0], sample[1], "dynamo", workdir))


def _timed(kind: str, name: str, onnx_path: str, samples: int) -> tuple[float, dict]:
    cmd = [sys.executable, __file__, "--child", kind, "--models", name, "--onnx", onnx_path,
           "--samples", str(samples)]
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT))
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{kind} {name} failed:\n{out.stderr[-3000:]}")
    return wall, json.loads(out.stdout.strip().splitlines()[-1])


def measure(name: str, n1: int, n2: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="drifttui-bench-") as d:
        # exported in a child: Linux keeps a process's RSS high-water mark across fork + exec, so a
        # parent that had loaded the model would put a floor under every child's ru_maxrss
        onnx_path = str(Path(d) / "model.onnx")
        subprocess.run([sys.executable, __file__, "--child", "export", "--models", name, "--onnx", d], check=True,
                       env=dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(ROOT)), cwd=str(ROOT),
                       capture_output=True)
        rows = []
        kinds = ["drifttui", "floor", "strict"]
        for rep in range(repeats):
            row: dict = {}
            for kind in kinds[rep % 3:] + kinds[:rep % 3]:
                t1, info1 = _timed(kind, name, onnx_path, n1)
                t2, info = _timed(kind, name, onnx_path, n2)
                row[kind] = {"t1": t1, "t2": t2, "marginal": (t2 - t1) / (n2 - n1), "peak_mb": info["peak_mb"],
                             "peak1_mb": info1["peak_mb"], "timings1": info1.get("timings"),
                             "timings": info.get("timings")}
            row["ratio"] = row["drifttui"]["marginal"] / row["floor"]["marginal"]
            row["strict_ratio"] = row["drifttui"]["marginal"] / row["strict"]["marginal"]
            # the whole run at N2 (imports, mapping, sessions and the fixed per-layer passes included)
            row["whole_ratio"] = row["drifttui"]["t2"] / row["floor"]["t2"]
            # memory: flat in the number of samples (N2 against N1), and against the floor at N2
            row["memory_ratio"] = row["drifttui"]["peak_mb"] / row["drifttui"]["peak1_mb"]
            row["memory_vs_floor"] = row["drifttui"]["peak_mb"] / row["floor"]["peak_mb"]
            tm = row["drifttui"]["timings"] or {}
            rows.append(row)
            print(f"  {name}: marginal drifttui {row['drifttui']['marginal'] * 1e3:.1f} ms/sample, floor "
                  f"{row['floor']['marginal'] * 1e3:.1f}, strict floor {row['strict']['marginal'] * 1e3:.1f}: "
                  f"{row['ratio']:.3f}x, {row['strict_ratio']:.3f}x strict; whole run at {n2}: "
                  f"{row['drifttui']['t2']:.1f} s against {row['floor']['t2']:.1f} s ({row['whole_ratio']:.2f}x); "
                  f"drifttui fixed "
                  f"{row['drifttui']['t1'] - n1 * row['drifttui']['marginal']:.1f} s, output pass median "
                  f"{tm.get('per_sample_median', 0) * 1e3:.1f} ms, per-layer passes {tm.get('local_runs', 0):.0f}; "
                  f"peak RSS {row['drifttui']['peak1_mb']:.0f} MB at {n1}, {row['drifttui']['peak_mb']:.0f} MB "
                  f"at {n2} = {row['memory_ratio']:.3f}x (the floor {row['floor']['peak_mb']:.0f} MB: "
                  f"{row['memory_vs_floor']:.2f}x)", flush=True)
    return {
        "rows": rows,
        "ratio": statistics.median(r["ratio"] for r in rows),
        "strict_ratio": statistics.median(r["strict_ratio"] for r in rows),
        "whole_ratio": statistics.median(r["whole_ratio"] for r in rows),
        "strict_ms": statistics.median(r["strict"]["marginal"] for r in rows) * 1e3,
        "memory_ratio": statistics.median(r["memory_ratio"] for r in rows),
        "memory_vs_floor": statistics.median(r["memory_vs_floor"] for r in rows),
        "drifttui_ms": statistics.median(r["drifttui"]["marginal"] for r in rows) * 1e3,
        "floor_ms": statistics.median(r["floor"]["marginal"] for r in rows) * 1e3,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet18,transformer")
    ap.add_argument("--n1", type=int, default=10)
    ap.add_argument("--n2", type=int, default=0, help="0: per model (resnet18 110, transformer 310)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--threads", type=int, default=0,
                    help="OMP_NUM_THREADS for both processes (torch's intra-op threads); 0: the default. "
                         "On a loaded shared machine 1 keeps torch's spinning OpenMP workers from "
                         "dominating both sides")
    ap.add_argument("--paired", type=int, default=0, metavar="N",
                    help="also the in-process paired measurement over N samples (robust under load)")
    ap.add_argument("--child", choices=["floor", "strict", "drifttui", "export", "paired"], help=argparse.SUPPRESS)
    ap.add_argument("--onnx", help=argparse.SUPPRESS)
    ap.add_argument("--samples", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "export":
        _export(args.models, Path(args.onnx))
        return
    if args.child:
        fn = {"floor": child_floor, "strict": child_strict, "drifttui": child_drifttui,
              "paired": child_paired}[args.child]
        print(json.dumps(fn(args.models, args.onnx, args.samples)))
        return
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)     # inherited by every child process
    print(f"nproc {os.cpu_count()}, load average {os.getloadavg()}; samples {args.n1} and "
          f"{args.n2 or 'per model ' + str(N2_DEFAULT)}, "
          f"{args.repeats} repeats, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'default')}", flush=True)
    report, ok = {}, True
    for name in args.models.split(","):
        if args.paired:
            with tempfile.TemporaryDirectory(prefix="drifttui-bench-") as d:
                env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(ROOT))
                subprocess.run([sys.executable, __file__, "--child", "export", "--models", name, "--onnx", d],
                               check=True, env=env, cwd=str(ROOT), capture_output=True)
                _, pr = _timed("paired", name, str(Path(d) / "model.onnx"), args.paired)
            report[f"{name}_paired"] = pr
            print(f"== {name}, paired in one process over {pr['pairs']} samples: drifttui {pr['drifttui_ms']:.1f} ms, "
                  f"floor {pr['floor_ms']:.1f} ms per sample: median ratio {pr['ratio']:.3f}x "
                  f"(per-layer pass on {pr['layer_samples']} samples)", flush=True)
            if args.repeats == 0:
                ok &= pr["ratio"] <= SPEED_GOAL
                continue
        r = report[name] = measure(name, args.n1, args.n2 or N2_DEFAULT.get(name, 110), args.repeats)
        print(f"== {name}: marginal per sample drifttui {r['drifttui_ms']:.1f} ms, floor {r['floor_ms']:.1f} ms, "
              f"strict floor {r['strict_ms']:.1f} ms; ratio (median) {r['ratio']:.3f}x (goal <= {SPEED_GOAL}x), "
              f"against the strict floor {r['strict_ratio']:.3f}x; whole run at N2 {r['whole_ratio']:.2f}x the "
              f"floor's; memory N2/N1 {r['memory_ratio']:.3f}x "
              f"(goal <= {MEMORY_GOAL}x), drifttui/floor peak RSS {r['memory_vs_floor']:.2f}x", flush=True)
        ok &= r["ratio"] <= SPEED_GOAL and r["memory_ratio"] <= MEMORY_GOAL
    print(f"load average at the end {os.getloadavg()}")
    print("all goals met" if ok else "SOME GOALS NOT MET (see docs/performance.md)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
