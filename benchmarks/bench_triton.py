"""drifttui's own time per served sample against the bare tritonclient round trip, side by side.

A real Triton server (PyTriton's tritonserver from the server venv: `make triton-server`) serves a
small classifier on 127.0.0.1 with the dynamic batcher's queue delay at 0.  Per protocol (HTTP, gRPC),
each loop sends the same 100 samples one request at a time, 5 repeats, medians per sample:

* bare:      tritonclient InferInput + infer + as_numpy (what a user's own check does);
* drifttui:  runtime/triton/client.Session.infer on the wire feeds + the per-sample comparison with
             the local run (compose/served_live: what `check --triton-url` times as "sequential").

Goal (issue 31): drifttui <= 1.2x bare.  Skips (exit 0, says why) when no server venv exists.

    .venv/bin/python benchmarks/bench_triton.py [--samples 100] [--repeats 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOAL = 1.2


def bare_loop(mod, client, name: str, wires: list[dict], protocol: str) -> float:
    t = time.perf_counter()
    for feeds in wires:
        inputs = []
        for k, arr in feeds.items():
            inp = mod.InferInput(k, list(arr.shape), "FP32")
            inp.set_data_from_numpy(arr, **({"binary_data": True} if protocol == "http" else {}))
            inputs.append(inp)
        client.infer(name, inputs).as_numpy("y")
    return (time.perf_counter() - t) / len(wires)


def drifttui_loop(session, setup, ref) -> float:
    from drifttui.core.compose.served_live import _devs

    t = time.perf_counter()
    for i, w in enumerate(ref.wire):
        ans = session.infer(setup.model, None, w, ref.names)
        _devs([ans], _one(ref, i), setup, "")
    return (time.perf_counter() - t) / len(ref.wire)


def _one(ref, i):
    from drifttui.core.compose.served_live import Reference

    return Reference(ref.names, [ref.wire[i]], [ref.torch[i]], [ref.local[i]])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from tests.triton.server import server_python, serving

    py, why = server_python()
    if py is None:
        print(f"skipped: {why}")
        return 0
    import tritonclient.grpc as grpcmod
    import tritonclient.http as httpmod

    from drifttui.core.compose import served_setup
    from drifttui.core.compose.served_live import reference
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from drifttui.core.runtime.triton.client import Session
    from tests.triton import nets

    work = Path(tempfile.mkdtemp(prefix="drifttui-bench-triton-"))
    onnx_file = nets.export(nets.mlp(), str(work / "mlp.onnx"))
    cfg = Config(model=f"{ROOT}/tests/triton/nets.py:mlp", onnx=onnx_file, inputs="shape:1x16", samples=args.samples)
    run = Pipeline().run(cfg)
    print(f"| protocol | bare tritonclient ms/sample | drifttui ms/sample | ratio (goal <= {GOAL}) |")
    print("|---|--:|--:|--:|")
    worst = 0.0
    with serving(onnx_file, "m", work, delay_us=0) as urls:
        for protocol, url, mod in (("http", urls[0], httpmod), ("grpc", urls[1], grpcmod)):
            session = Session(url)
            setup = served_setup.from_server(cfg, session.config("m", None))
            ref = reference(run.prepared, run.result.config, setup)
            host = url.split("://", 1)[1]
            client = mod.InferenceServerClient(host)
            bare, ours = [], []
            for _ in range(args.repeats):          # interleaved: the same server load for both
                bare.append(bare_loop(mod, client, "m", ref.wire, protocol))
                ours.append(drifttui_loop(session, setup, ref))
            client.close()
            session.close()
            b, o = statistics.median(bare), statistics.median(ours)
            worst = max(worst, o / b)
            print(f"| {protocol} | {1000 * b:.2f} | {1000 * o:.2f} | {o / b:.2f}x |")
    print(f"\nworst ratio {worst:.2f}x: goal {'met' if worst <= GOAL else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
