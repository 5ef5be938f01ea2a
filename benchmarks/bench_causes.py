"""Held-out scorecard for the verified causes (issue 20): drift forms that tests/causes/ does not
hold (benchmarks/causes_forms.py), exported by the real exporters, run in real ONNX Runtime.

For each drifting form: the origin right, the headline cause's class right, verified, and
``drifttui repair --out FIXED`` then ``drifttui check --onnx FIXED`` (exit 0).  For each clean
control: no drift and no error finding.  Prints one row per form and the totals.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_causes.py [NAME ...]

Not a timed test: a scorecard, run by hand (about 5 minutes on 2 cores).  Each row also says how long
the causes took against the per-layer check run of the same model (``explain/run``) and how many
patches ran (``trials``); the totals give the median ratio.
"""
from __future__ import annotations

import contextlib
import io
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = Path(__file__).parent
SPEC = str(HERE / "causes_forms.py")
IMG = {"gnorm", "bicubic_ac", "grid_bicubic", "avg_ceil"}


def _in_body(node: Any) -> bool:
    from drifttui.core.onnx.edit.surgery import _in_scope

    return _in_scope(node, "body")


def _const_of(proto: Any, name: str) -> Optional[Any]:
    for t in proto.graph.initializer:
        if t.name == name:
            return t
    for n in proto.graph.node:
        if n.op_type == "Constant" and name in n.output and n.attribute and n.attribute[0].name == "value":
            return n.attribute[0].t
    return None


def set_constant(op: str, old: float, new: float) -> Callable[[Any], None]:
    """The body's ``op`` whose scalar constant input is ``old`` gets ``new`` (a functional constant
    exported wrong)."""
    def edit(proto: Any) -> None:
        for node in proto.graph.node:
            if node.op_type != op or not _in_body(node):
                continue
            for pos, name in enumerate(node.input):
                t = _const_of(proto, name)
                arr = numpy_helper.to_array(t) if t is not None else None
                if arr is not None and arr.size == 1 and abs(float(arr.ravel()[0]) - old) < 1e-4:
                    fresh = numpy_helper.from_array(np.full(arr.shape, new, arr.dtype), f"{node.name}_c{pos}")
                    proto.graph.initializer.append(fresh)
                    node.input[pos] = fresh.name
                    return
        raise RuntimeError(f"no {op} with the constant {old} in body")
    return edit


def drop_attr(op: str, attr: str) -> Callable[[Any], None]:
    def edit(proto: Any) -> None:
        node = next(n for n in proto.graph.node if n.op_type == op and _in_body(n))
        keep = [a for a in node.attribute if a.name != attr]
        del node.attribute[:]
        node.attribute.extend(keep)
    return edit


def set_eps(value: float) -> Callable[[Any], None]:
    def edit(proto: Any) -> None:
        node = next(n for n in proto.graph.node if _in_body(n) and any(a.name == "epsilon" for a in n.attribute))
        keep = [a for a in node.attribute if a.name != "epsilon"]
        del node.attribute[:]
        node.attribute.extend(keep + [helper.make_attribute("epsilon", value)])
    return edit


# (model, exporter, opset) -> (expected headline class or "" for a clean control, kind or "", edit)
FORMS: dict[tuple[str, str, Optional[int]], tuple[str, str, Optional[Callable[[Any], None]]]] = {
    ("pdist", "torchscript", None): ("normalization", "export", None),
    ("pdist", "torchscript", 11): ("normalization", "export", None),     # the graft converts opsets
    ("pdist", "torchscript", 14): ("normalization", "export", None),
    ("softplus_beta", "torchscript", None): ("op-compat", "export", None),
    # classes by mechanism (issue 30 point 3): Log(Exp(a) + Exp(b)) overflows, its stable form verifies
    ("logaddexp2", "dynamo", None): ("stability", "export", None),
    # ONNX Runtime's MLAS Tanh is ulps off near 1 (it saturates at 8.1), the ONNX op is not: the runtime's kernel
    # (op-compat), as sig_log1m's.  Labelled stability/export until session 47, while the reference evaluator
    # computed float32 tanh with numpy's SIMD approximation, ulps off too (locate/exact_unary.py corrected it)
    ("tanh_tail", "torchscript", None): ("op-compat", "runtime", None),
    ("tanh_tail", "dynamo", None): ("op-compat", "runtime", None),
    ("sig_log1m", "torchscript", None): ("op-compat", "runtime", None),
    ("silu_log", "torchscript", None): ("op-compat", "runtime", None),
    ("scaled", "torchscript", None): ("custom-module", "export", set_constant("Mul", 0.25, 0.27)),
    ("scaled", "dynamo", None): ("custom-module", "export", set_constant("Mul", 0.25, 0.27)),
    ("scaled_head", "torchscript", None): ("custom-module", "export", set_constant("Mul", 0.25, 0.27)),
    ("scaled_head", "dynamo", None): ("custom-module", "export", set_constant("Mul", 0.25, 0.27)),
    ("attn", "dynamo", None): ("custom-module", "export", set_constant("Mul", 8 ** -0.5, 0.3)),
    ("hsig", "torchscript", None): ("op-compat", "export", drop_attr("HardSigmoid", "alpha")),
    ("gnorm", "torchscript", None): ("normalization", "export", set_eps(0.1)),
    ("gnorm", "dynamo", None): ("normalization", "export", set_eps(0.1)),
    # clean controls
    ("pdist", "dynamo", None): ("", "", None),
    ("softplus_beta", "dynamo", None): ("", "", None),
    ("bicubic_ac", "dynamo", None): ("", "", None),
    ("grid_bicubic", "torchscript", None): ("", "", None),
    ("avg_ceil", "torchscript", None): ("", "", None),
}


def _export(model: str, exporter: str, opset: Optional[int], edit: Optional[Callable[[Any], None]], out: Path) -> Path:
    import torch

    from benchmarks import causes_forms

    torch.manual_seed(0)
    args = (causes_forms.img_inputs if model in IMG else causes_forms.vec_inputs)()
    path = out / f"{model}-{exporter}{opset or ''}.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(getattr(causes_forms, model)(), args, str(path), dynamo=exporter == "dynamo",
                          **({} if opset is None else {"opset_version": opset}))
    if edit is not None:
        proto = onnx.load(str(path))
        edit(proto)
        onnx.save(proto, str(path))
    return path


ORIGIN = {"pdist": "body.d"}       # PairwiseDistance is body's child: the deepest drifting module


def _name(model: str, exporter: str, opset: Optional[int]) -> str:
    return f"{model}/{exporter}{opset or ''}"


def _cli(argv: list[str]) -> int:
    from drifttui.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def score(model: str, exporter: str, opset: Optional[int], out: Path) -> dict[str, Any]:
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    want, kind, edit = FORMS[(model, exporter, opset)]
    path = _export(model, exporter, opset, edit, out)
    inputs = f"{SPEC}:{'img_inputs' if model in IMG else 'vec_inputs'}"
    cfg = Config(model=f"{SPEC}:{model}", onnx=str(path), inputs=inputs, samples=3)
    engine = Pipeline()
    with contextlib.redirect_stdout(io.StringIO()):
        t0 = time.perf_counter()
        run = engine.run(cfg)
        t1 = time.perf_counter()
        ex = engine.explain(run.result)
        t2 = time.perf_counter()
    res, exp = ex.result, ex.explanation
    errors = [f for f in exp.findings if f.severity == "error"]
    row: dict[str, Any] = {"form": _name(model, exporter, opset), "want": want or "(clean)", "verdict": res.verdict,
                           "ratio": (t2 - t1) / (t1 - t0), "trials": len(exp.trials)}
    if not want:
        row.update(ok=res.verdict == "ok" and not errors, got=errors[0].check if errors else "-")
        return row
    head = exp.findings[0] if exp.findings else None
    row["origin"] = res.drift_origin is not None and res.drift_origin.module == ORIGIN.get(model, "body")
    row["got"] = f"{head.check}/{head.kind}" if head else "-"
    row["class"] = head is not None and head.check == want and (not kind or head.kind == kind)
    row["verified"] = bool(head and head.verified)
    row["message"] = head.message[:90] if head else ""
    fixed = out / f"{model}-{exporter}{opset or ''}-fixed.onnx"
    common = [f"{SPEC}:{model}", "--inputs", inputs, "--samples", "3"]
    row["repair_rc"] = _cli(["repair", *common, "--onnx", str(path), "--out", str(fixed)])
    row["check_rc"] = _cli(["check", *common, "--onnx", str(fixed)]) if fixed.exists() else None
    row["ok"] = row["origin"] and row["class"] and row["verified"] and row["check_rc"] == 0
    return row


def _warm() -> float:
    """Load what the first explain of a process loads once (torch._dynamo, torchlib's registry: about 3 s), so the
    first form's ratio measures the engine, not the imports; the seconds it took are printed."""
    import torch

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as d, contextlib.redirect_stdout(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(torch.nn.Linear(2, 2), (torch.ones(1, 2),), str(Path(d) / "w.onnx"), dynamo=True)
    return time.perf_counter() - t0


def main(names: list[str]) -> int:
    keys = [k for k in FORMS if not names or k[0] in names or _name(*k) in names]
    rows = []
    print(f"warm-up (once per process: torch._dynamo and torchlib's registry load): {_warm():.1f} s", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-causes-") as d:
        for key in keys:
            try:
                rows.append(score(*key, Path(d)))
            except Exception as exc:           # a crash is a miss, with its reason
                rows.append({"form": _name(*key), "want": FORMS[key][0] or "(clean)",
                             "ok": False, "got": f"CRASH {type(exc).__name__}: {str(exc)[:60]}"})
            r = rows[-1]
            print(f"{r['form']:26} {r['want']:14} {r['got']:22} origin={r.get('origin', '-')!s:5} "
                  f"class={r.get('class', '-')!s:5} verified={r.get('verified', '-')!s:5} "
                  f"repair={r.get('repair_rc', '-')!s:4} check={r.get('check_rc', '-')!s:4} "
                  f"explain/run={r.get('ratio', float('nan')):5.1f} trials={r.get('trials', '-')!s:3} "
                  f"{'OK ' if r['ok'] else 'MISS'} {r.get('message', '')}", flush=True)
    drifts = [r for r in rows if r["want"] != "(clean)"]
    clean = [r for r in rows if r["want"] == "(clean)"]
    n = len(drifts)
    print(f"\ndrifts {n}: origin {sum(bool(r.get('origin')) for r in drifts)}/{n}, "
          f"class {sum(bool(r.get('class')) for r in drifts)}/{n}, "
          f"verified {sum(bool(r.get('verified')) for r in drifts)}/{n}, "
          f"repair passes check {sum(r.get('check_rc') == 0 for r in drifts)}/{n}; "
          f"all four {sum(r['ok'] for r in drifts)}/{n}")
    print(f"clean controls {len(clean)}: no drift and no error finding {sum(r['ok'] for r in clean)}/{len(clean)}")
    timed = [r for r in drifts if "ratio" in r]
    if timed:
        print(f"explain / run (the causes against the per-layer check run), median over the drifts: "
              f"{statistics.median(r['ratio'] for r in timed):.2f}; trials: {sum(r['trials'] for r in timed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
