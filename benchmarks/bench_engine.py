"""Engine cost: drifttui's full per-layer analysis against one bare torch forward + one bare ORT run.

For each model (a width-64 ResNet-18 at 1x3x224x224 and a 4-layer d=256 transformer encoder
at 128 tokens) this runs, each in its own process (imports and process start excluded):

* speed: ``Session.run`` over N samples (default 100) of the exported model (export and
  mapping timed separately).  After every sample the progress callback times one bare torch
  forward and one bare ORT run (same graph, same ORT options) of the same sample, so each
  drifttui sample is measured side by side with its own baseline: the machine's noise hits
  both.  Reported: the median of the per-sample ratios (samples 1..N-2: sample 0 warms up,
  the last one also builds the result) and the medians of both times.
* memory: peak RSS (ru_maxrss) of a run with 1 sample and of a run with N samples.
* verify: ``torch.onnx.verification.verify_onnx_program(onnx_program, args=..., compare_intermediates=True)``
  on one input, against drifttui's cost per sample and against a whole one-sample run.

    .venv/bin/python benchmarks/bench_engine.py [--samples 100] [--models resnet18,transformer]
                                                [--skip-memory] [--skip-verify] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")
SPEED_GOAL = 1.25
MEMORY_GOAL = 1.2


def _model_and_input(name: str):
    import torch

    from benchmarks import models as bm

    gen = torch.Generator().manual_seed(0)
    if name == "resnet18":
        return bm.resnet18_w64(), lambda i: torch.randn((1, 3, 224, 224), generator=gen.manual_seed(i))
    return bm.transformer_d256(), lambda i: torch.randint(0, 10, (1, 128), generator=gen.manual_seed(i))


def _spec(name: str) -> tuple[str, str]:
    from benchmarks.models import MODELS

    model, inputs = MODELS[name]
    return str(ROOT / model), inputs


def child_speed(name: str, samples: int, batch: int = 1) -> dict:
    import tempfile

    import onnxruntime as ort
    import torch

    from drifttui.api import Progress
    from drifttui.core.capture_ort import session_options
    from drifttui.core.export import dynamic_batch, export_model
    from drifttui.core.inputs import build_source
    from drifttui.core.result import Config
    from drifttui.core.session import Session
    from drifttui.core.spec import parse_input_spec

    model, _ = _model_and_input(name)
    model_spec, input_spec = _spec(name)
    source = build_source(parse_input_spec(input_spec), 0, False, None)   # the samples drifttui will draw
    workdir = Path(tempfile.mkdtemp(prefix="drifttui-bench-"))
    t = time.perf_counter()
    with dynamic_batch(batch > 1):     # --batch needs a dynamic dim 0
        path = export_model(model, source.sample(0)[0], {}, "dynamo", workdir)
    export_s = time.perf_counter() - t
    bare = ort.InferenceSession(str(path), session_options("disable", False), providers=["CPUExecutionProvider"])
    in_name = bare.get_inputs()[0].name

    def baseline(i: int) -> tuple[float, float]:
        x = source.sample(i)[0][0]
        t0 = time.perf_counter()
        with torch.inference_mode():
            model(x)
        t1 = time.perf_counter()
        bare.run(None, {in_name: x.numpy()})
        return t1 - t0, time.perf_counter() - t1

    warm = [baseline(i) for i in range(10)]
    if os.environ.get("BENCH_DEBUG"):
        print("warm-up baseline", warm, file=sys.stderr)
    state = {"last": None, "in_callback": 0.0, "done": 0}
    drift_t: list[float] = []
    torch_t: list[float] = []
    ort_t: list[float] = []

    def progress(p: Progress) -> None:
        now = time.perf_counter()
        if p.stage == "samples" and state["last"] is not None:
            # one callback per batch of samples (--batch): its time against the sum of its baselines
            k = p.done - state["done"]
            drift_t.append((now - state["last"]) / k)
            base = [baseline(i) for i in range(state["done"], p.done)]
            torch_t.append(sum(a for a, _ in base) / k)
            ort_t.append(sum(b for _, b in base) / k)
            if os.environ.get("BENCH_DEBUG"):
                print(f"sample {p.done - 1}: drifttui {drift_t[-1]:.4f} torch {torch_t[-1]:.4f} "
                      f"ort {ort_t[-1]:.4f}", file=sys.stderr)
        state["last"] = time.perf_counter() if p.stage == "samples" else None
        state["done"] = p.done
        state["in_callback"] += time.perf_counter() - now

    cfg = Config(model=model_spec, onnx=str(path), inputs=input_spec, samples=samples, batch=batch)
    result = Session(cfg).run(progress=progress)
    # drift_t[k] is sample k+1 (sample 0 ran before the first callback); drop the warm-up and the last
    pairs = [(d, a + b) for d, a, b in zip(drift_t, torch_t, ort_t)][:max(samples - 2, 1)]
    ratios = [d / b for d, b in pairs]
    # everything drifttui did after loading the model (map, sessions, every sample incl. the first
    # with its local run, partial results), spread over the samples, against the median baseline
    spent = result.timings["total"] - result.timings.get("load", 0.0) - state["in_callback"]
    base = statistics.mean(a + b for a, b in zip(torch_t, ort_t)) if torch_t else None   # mean vs mean
    assert not any("--batch" in n for n in result.notes), result.notes
    return {
        "model": name, "samples": samples, "batch": batch, "verdict": result.verdict, "layers": len(result.layers),
        "export_s": export_s, "map_s": result.timings.get("map", 0) + result.timings.get("sessions", 0), "local_runs": result.timings.get("local_runs"),
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_of_medians": (statistics.median(d for d, _ in pairs) / statistics.median(b for _, b in pairs))
        if pairs else None,
        "drifttui_sample_s": statistics.median(d for d, _ in pairs) if pairs else None,
        "torch_s": statistics.median(torch_t) if torch_t else None,
        "ort_s": statistics.median(ort_t) if ort_t else None,
        "pairs": len(pairs),
        "amortized_ratio": spent / samples / base if base else None,
        "timings": result.timings,
    }


def child_memory(name: str, samples: int) -> dict:
    import resource

    from drifttui.core.result import Config
    from drifttui.core.session import Session

    model_spec, input_spec = _spec(name)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = Session(Config(model=model_spec, inputs=input_spec, samples=samples)).run()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"model": name, "samples": samples, "peak_mb": peak / 1024, "after_imports_mb": before / 1024,
            "one_sample_run_s": sum(result.timings.get(k, 0) for k in ("map", "sessions", "samples")),
            "timings": result.timings,
            "verdict": result.verdict}


def child_verify(name: str) -> dict:
    import torch
    from torch.onnx.verification import verify_onnx_program

    model, make = _model_and_input(name)
    x = make(0)
    t = time.perf_counter()
    program = torch.onnx.export(model, (x,), dynamo=True, verbose=False)
    export_s = time.perf_counter() - t
    t = time.perf_counter()
    infos = verify_onnx_program(program, args=(x,), compare_intermediates=True)
    verify_s = time.perf_counter() - t
    return {"model": name, "verify_s": verify_s, "values": len(infos), "export_s": export_s}


def _run_child(kind: str, name: str, samples: int, batch: int = 1) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--models", name, "--samples", str(samples),
           "--batch", str(batch)]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT))
    if out.returncode != 0:
        raise SystemExit(f"{kind} {name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _machine() -> dict:
    import platform

    import numpy
    import onnx
    import onnxruntime
    import torch

    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "torch": torch.__version__,
            "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__, "numpy": numpy.__version__,
            "loadavg": os.getloadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--models", default="resnet18,transformer")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-verify", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--batch", type=int, default=8,
                    help="also measure --batch N (per-sample cost, same unbatched baseline); 1: skip")
    ap.add_argument("--child", choices=["speed", "memory", "verify"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        fn = {"speed": lambda: child_speed(args.models, args.samples, args.batch),
              "memory": lambda: child_memory(args.models, args.samples),
              "verify": lambda: child_verify(args.models)}[args.child]
        print(json.dumps(fn()))
        return
    report: dict = {"machine": _machine(), "models": {}}
    print(f"machine: {report['machine']}")
    ok = True
    for name in args.models.split(","):
        r: dict = {}
        r["speed"] = s = _run_child("speed", name, args.samples)
        print(f"\n== {name} ({s['layers']} layers, verdict {s['verdict']}, {s['pairs']} paired samples)")
        print(f"  per sample: drifttui {s['drifttui_sample_s'] * 1e3:.1f} ms | bare torch {s['torch_s'] * 1e3:.1f} ms"
              f" + bare ORT {s['ort_s'] * 1e3:.1f} ms")
        print(f"  ratio (median of per-sample ratios): {s['ratio_median']:.3f}x   (ratio of medians "
              f"{s['ratio_of_medians']:.3f}x)   goal <= {SPEED_GOAL}x")
        print(f"  whole run after loading (map, sessions, every sample, results) / N, against the mean "
              f"baseline: {s['amortized_ratio']:.3f}x")
        print(f"  export {s['export_s']:.2f} s, map + sessions {s['map_s']:.2f} s (not in the paired ratio); "
              f"local runs {s['local_runs']:.0f} of {args.samples} samples")
        if args.batch > 1:
            b = r["speed_batched"] = _run_child("speed", name, args.samples, args.batch)
            print(f"  --batch {args.batch}: per sample drifttui {b['drifttui_sample_s'] * 1e3:.1f} ms | bare torch "
                  f"{b['torch_s'] * 1e3:.1f} ms + bare ORT {b['ort_s'] * 1e3:.1f} ms (unbatched); ratio (median of "
                  f"per-batch ratios, {b['pairs']} batches): {b['ratio_median']:.3f}x; whole run / N "
                  f"{b['amortized_ratio']:.3f}x")
        ok &= min(s["ratio_median"], r.get("speed_batched", s)["ratio_median"]) <= SPEED_GOAL
        if not args.skip_memory:
            one = _run_child("memory", name, 1)
            many = _run_child("memory", name, args.samples)
            r["memory"] = {"one": one, "many": many, "ratio": many["peak_mb"] / one["peak_mb"]}
            print(f"  peak RSS: {one['peak_mb']:.0f} MB at 1 sample, {many['peak_mb']:.0f} MB at {args.samples}: "
                  f"{r['memory']['ratio']:.3f}x   goal <= {MEMORY_GOAL}x  (after imports: {one['after_imports_mb']:.0f} MB)")
            ok &= r["memory"]["ratio"] <= MEMORY_GOAL
        if not args.skip_verify:
            v = r["verify"] = _run_child("verify", name, 1)
            one_run = r.get("memory", {}).get("one", {}).get("one_sample_run_s")
            print(f"  verify_onnx_program(compare_intermediates=True): {v['verify_s']:.2f} s for one input "
                  f"({v['values']} values) = {v['verify_s'] / s['drifttui_sample_s']:.0f}x drifttui's cost per sample"
                  + (f", {v['verify_s'] / one_run:.1f}x a whole one-sample drifttui run (map + sessions + sample)"
                     if one_run else ""))
        report["models"][name] = r
    print(f"\nmachine load average at the end: {os.getloadavg()}")
    print("all goals met" if ok else "SOME GOALS NOT MET (see docs/performance.md)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
