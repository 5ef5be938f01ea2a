"""Big models at the floor's cost: the whole run and the peak memory of `drifttui check` against the floor.

Whole processes, side by side, on LLaMA models (``benchmarks/llama.py``: transformers'
``LlamaForCausalLM``, seeded random weights, no download), as a new user runs them:

* **the floor**: a plain script that builds the same model, opens one ONNX Runtime session on the
  same ONNX file (ORT's defaults, idle threads not spinning) and runs N samples (one torch forward
  in ``inference_mode`` and one ORT run each), the samples drifttui draws;
* **drifttui**: ``drifttui check MODEL --inputs SPEC --onnx FILE --samples N``, default settings,
  ending as the command does (``cli.entry``: no interpreter teardown after the report);
* **drifttui with a limit** (``--limit SIZE``): the same with ``--max-memory SIZE``: its peak RSS
  must stay under SIZE.

The ONNX file is exported once up front (dynamo, weights as external data) in a child process,
so neither side pays the export and no parent's memory lingers in a child's high-water mark.
Whole-process wall clock and peak RSS (``ru_maxrss``) of each; the kinds of a repeat run back to
back, their order rotating between repeats; reported are the medians of the per-repeat ratios.

    .venv/bin/python benchmarks/bench_big.py [--models llama220m] [--samples 10] [--repeats 3]
                                             [--limit 3G] [--onnx-dir DIR] [--json PATH]
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
WHOLE_GOAL = 1.5          # the whole run at 10 samples, against the floor's
MEMORY_GOAL = 1.3         # peak RSS against the floor's


def _spec(name: str) -> tuple[str, str]:
    from benchmarks.llama import MODELS

    model, inputs = MODELS[name]
    return str(ROOT / model), inputs


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_export(name: str, folder: str) -> dict:
    from drifttui.core.model.export import export_model
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.model.spec import parse_input_spec, parse_model_spec

    model_spec, input_spec = _spec(name)
    model = load_torch_model(parse_model_spec(model_spec))
    sample = build_source(parse_input_spec(input_spec), 0, False, None).sample(0)
    return {"onnx": str(export_model(model, sample[0], sample[1], "dynamo", Path(folder)))}


def child_floor(name: str, onnx_path: str, samples: int, extra: list[str]) -> dict:
    """Build the model, one ORT session at its defaults, N x (torch forward + ORT run)."""
    import onnxruntime as ort
    import torch

    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.model.spec import parse_input_spec, parse_model_spec

    from drifttui.cli_common import process_age

    started = process_age()       # the interpreter and the imports, as drifttui's timings["startup"]
    model_spec, input_spec = _spec(name)
    model = load_torch_model(parse_model_spec(model_spec))
    source = build_source(parse_input_spec(input_spec), 0, False, None)
    so = ort.SessionOptions()             # ORT's defaults: graph_optimization_level ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    for i in range(samples):
        x = source.sample(i)[0][0]
        with torch.inference_mode():
            model(x)
        sess.run(None, {in_name: x.numpy()})
    return {"peak_mb": _peak_mb(), "startup": started}


def child_drifttui(name: str, onnx_path: str, samples: int, extra: list[str]) -> dict:
    import contextlib
    import io

    from drifttui.cli import main

    model_spec, input_spec = _spec(name)
    with tempfile.TemporaryDirectory(prefix="drifttui-bench-") as d:
        report = Path(d) / "r.json"
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(["check", model_spec, "--inputs", input_spec, "--onnx", onnx_path, "--samples", str(samples),
                         "--json", str(report), *extra])
        data = json.loads(report.read_text()) if report.exists() else {}
    return {"peak_mb": _peak_mb(), "exit": code, "timings": data.get("timings", {}), "notes": data.get("notes", []),
            "error": err.getvalue()[-500:]}


CHILDREN = {"floor": child_floor, "drifttui": child_drifttui, "limited": child_drifttui}


def _run(kind: str, name: str, onnx_path: str, samples: int, extra: list[str]) -> tuple[float, dict]:
    cmd = [sys.executable, __file__, "--child", kind, "--models", name, "--onnx", onnx_path,
           "--samples", str(samples), "--extra", json.dumps(extra)]
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT))
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{kind} {name} failed:\n{out.stderr[-3000:]}")
    return wall, json.loads(out.stdout.strip().splitlines()[-1])


def measure(name: str, onnx_path: str, samples: int, repeats: int, limit: str) -> dict:
    kinds = ["drifttui", "floor"] + (["limited"] if limit else [])
    rows = []
    for rep in range(repeats):
        row: dict = {}
        for kind in kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]:
            extra = ["--max-memory", limit] if kind == "limited" else []
            wall, info = _run(kind, name, onnx_path, samples, extra)
            if info.get("exit", 0) not in (0, 1):
                raise SystemExit(f"{kind} {name}: drifttui check exited {info['exit']}: {info.get('error', '')}")
            row[kind] = dict(info, wall=wall)
        d, f = row["drifttui"], row["floor"]
        row["whole_ratio"] = d["wall"] / f["wall"]
        row["memory_ratio"] = d["peak_mb"] / f["peak_mb"]
        tm = d.get("timings", {})
        stages = ", ".join(f"{k} {tm[k]:.1f} s" for k in ("startup", "load", "map", "sessions", "observer", "samples")
                           if k in tm)
        if f.get("startup") is not None:
            stages += f"; the floor's startup {f['startup']:.1f} s"
        print(f"  {name} x{samples}: drifttui {d['wall']:.1f} s, {d['peak_mb']:.0f} MB; floor {f['wall']:.1f} s, "
              f"{f['peak_mb']:.0f} MB: whole run {row['whole_ratio']:.2f}x, peak memory {row['memory_ratio']:.2f}x "
              f"({stages}; output pass median {tm.get('per_sample_median', 0):.2f} s)", flush=True)
        if limit:
            lim = row["limited"]
            print(f"    --max-memory {limit}: {lim['wall']:.1f} s, peak {lim['peak_mb']:.0f} MB, exit {lim['exit']}",
                  flush=True)
        rows.append(row)
    out = {"rows": rows, "samples": samples,
           "whole_ratio": statistics.median(r["whole_ratio"] for r in rows),
           "memory_ratio": statistics.median(r["memory_ratio"] for r in rows),
           "drifttui_s": statistics.median(r["drifttui"]["wall"] for r in rows),
           "floor_s": statistics.median(r["floor"]["wall"] for r in rows),
           "drifttui_mb": statistics.median(r["drifttui"]["peak_mb"] for r in rows),
           "floor_mb": statistics.median(r["floor"]["peak_mb"] for r in rows)}
    if limit:
        out["limited_mb"] = max(r["limited"]["peak_mb"] for r in rows)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="llama220m", help="comma-separated: llama220m, llama1b")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", default="", help="also run drifttui with --max-memory LIMIT (e.g. 3G)")
    ap.add_argument("--onnx-dir", help="reuse (or keep) the exports here: DIR/NAME/model.onnx")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--child", choices=["floor", "drifttui", "limited", "export"], help=argparse.SUPPRESS)
    ap.add_argument("--onnx", help=argparse.SUPPRESS)
    ap.add_argument("--extra", default="[]", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "export":
        print(json.dumps(child_export(args.models, args.onnx)))
        return
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.models, args.onnx, args.samples, json.loads(args.extra))),
              flush=True)
        if args.child != "floor":
            # as the `drifttui` command ends (cli.entry): no interpreter teardown once the report is out;
            # the floor, a plain script, ends as Python does
            import atexit

            atexit._run_exitfuncs()
            os._exit(0)
        return
    print(f"nproc {os.cpu_count()}, load average {os.getloadavg()}; {args.samples} samples, {args.repeats} repeats",
          flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="drifttui-bench-") as tmp:
        for name in args.models.split(","):
            folder = Path(args.onnx_dir or tmp) / name
            onnx_path = next(iter(sorted(folder.glob("*.onnx"))), folder / "model.onnx")
            if not onnx_path.exists():
                folder.mkdir(parents=True, exist_ok=True)
                t = time.perf_counter()
                _run("export", name, str(folder), 0, [])
                print(f"  {name}: exported in {time.perf_counter() - t:.0f} s", flush=True)
            results[name] = measure(name, str(onnx_path), args.samples, args.repeats, args.limit)
            r = results[name]
            print(f"{name}: whole run {r['whole_ratio']:.2f}x the floor (goal <= {WHOLE_GOAL}x), peak memory "
                  f"{r['memory_ratio']:.2f}x (goal <= {MEMORY_GOAL}x); medians of {args.repeats}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
