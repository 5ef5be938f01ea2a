"""A drift fuzzer: random torch calls nobody here picked, in issue 30's six families, exported by both exporters,
screened against ONNX Runtime, and, where they drift, diagnosed and repaired by drifttui on its first run.

Issue 30 is judged on upstream drifts that no test here was built from.  The blind batches (tests/causes/forms40*)
measure that by hand, a handful of forms per session.  This draws many: program ``n`` is one call from
``fuzz_ops.py`` (its arguments drawn too: a rounding mode, an eps, a ``p``, a reduction, a mask), on inputs scaled by
a drawn factor, inside a deep model (16 stem calls, even ``n``) or after one Linear (odd ``n``); the call is the
module ``body``.  A program drifts when, on any of 3 seeded samples, an output element differs by more than
1e-3 + 1e-3 * |torch| or is finite on one side only (the screen is independent of drifttui).  For each drift:

* ``found``: drifttui's verdict is not ok (a drift it did not see is a miss);
* ``origin``: the origin is ``body``;
* ``verified``: the head finding is verified; ``class``: its check/kind (judge by hand whether it is the mechanism);
* ``told``: the head finding's message names the torch call (its function's name);
* ``repair``: ``drifttui repair``'s file passes ``drifttui check``.

And per clean program, a sample of them run as controls: no drift and no error finding.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fuzz_drifts.py [--start N] [--count N] [--budget SECONDS]
        [--pool hand|schema]

``--pool schema`` draws from ``fuzz_schema.py`` instead: every ATen op the exporters' own sources lower, called
through its schema (``schema_17`` is that pool's program 17).  Programs whose file ONNX Runtime refuses to load or
run are counted in the screen (an invalid file: no numbers to compare), not scored.

A scorecard, run by hand, not a test.  The seed range is the held-out set: tune on one range, judge on another.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import random
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from fuzz_ops import back, draw  # noqa: E402

HERE = Path(__file__)
DEPTH, WIDTH, ROWS = 16, 32, 6
NOT_FINITE = "torch's output is not finite"
NOT_REPEATABLE = "torch's output is not repeatable (uninitialised memory)"
REPEATS = 8


class Body(nn.Module):
    """The drawn call on the scaled input, its result brought back to (B, 32) (``fuzz_ops.back``)."""

    def __init__(self, call: Any, scale: float) -> None:
        super().__init__()
        self.call, self.scale = call, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return back(self.call(x * self.scale), x, WIDTH)


class Deep(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.stem = nn.Sequential(*[m for _ in range(DEPTH // 2) for m in (nn.Linear(WIDTH, WIDTH), nn.GELU())])
        self.body, self.head = body, nn.Linear(WIDTH, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.stem(x) * 3.0))


class Shallow(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(WIDTH, WIDTH), body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def program(n: int, pool: str = "hand") -> tuple[nn.Module, dict[str, Any]]:
    """Program ``n`` of ``pool`` (``hand``: ``fuzz_ops.py``; ``schema``: ``fuzz_schema.py``, the ATen ops the
    exporters lower): the model (weights seeded) and what was drawn."""
    if pool == "schema":
        from fuzz_schema import draw_seed

        family, text, call, scale = draw_seed(n)
    else:
        family, text, call, scale = draw(random.Random(n))
    torch.manual_seed(n)
    model = (Deep if n % 2 == 0 else Shallow)(Body(call, scale)).eval()
    return model, {"n": n, "family": family, "call": text, "scale": scale, "deep": n % 2 == 0, "pool": pool}


def rows() -> torch.Tensor:
    return torch.randn(ROWS, WIDTH)


def __getattr__(name: str) -> Any:
    """``fuzz_drifts.py:program_17`` is program 17's model (``schema_17`` the schema pool's), as drifttui's MODEL
    spec."""
    m = re.fullmatch(r"(program|schema)_(\d+)", name)
    if m is None:
        raise AttributeError(name)
    pool = "schema" if m.group(1) == "schema" else "hand"
    return lambda: program(int(m.group(2)), pool)[0]


@contextlib.contextmanager
def _quiet() -> Any:
    """Python's and C++'s prints (the TorchScript exporter dumps its graph to the process's stderr) go nowhere."""
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        sys.stdout.flush()
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _export(model: nn.Module, exporter: str, path: Path, x: Optional[torch.Tensor] = None) -> Optional[str]:
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings(), _quiet():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (rows() if x is None else x,), str(path), dynamo=exporter == "dynamo")
        return None
    except Exception as exc:            # not exportable: the exporter refuses the call, no drift to find
        return f"{type(exc).__name__}"


def _differs(want: np.ndarray, got: np.ndarray) -> Optional[str]:
    """drifttui's default rule (|d| <= 1e-4 + 1e-4 * max |torch|), computed here on its own; finite on one side only
    fails."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    one_side = (np.isfinite(want) != np.isfinite(got)) | (np.isnan(want) != np.isnan(got))
    both = np.isfinite(want) & np.isfinite(got)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.where(both, np.abs(got.astype(np.float64) - want), 0.0)
    if one_side.any() or d.max(initial=0.0) > 1e-4 + 1e-4 * np.abs(want[np.isfinite(want)]).max(initial=0.0):
        return f"max |d| {d.max(initial=0.0):.3g}, non-finite on one side {int(one_side.sum())}"
    return None


def repeatable(model: nn.Module, x: torch.Tensor) -> bool:
    """Whether the module computes the same output on ``x`` each time, and under
    ``torch.use_deterministic_algorithms`` (which fills uninitialised memory: NaN, an integer's largest value, True).
    A value read from memory nobody wrote (``new_empty(x > 0, [1])``) is garbage that may read as the fill does on
    one call, so the forward runs several times; the screen leaves such a program out (no numbers to compare), where
    the draw's own probe (``fuzz_schema.accepts``) can miss it: changing that probe would change the pool's draws."""
    from fuzz_schema import _deterministic

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = model(x)
        same = all(torch.equal(first, model(x)) for _ in range(REPEATS))
        with _deterministic():
            return same and torch.equal(first, model(x))


def _runs(model: nn.Module, path: Path, feeds: list[torch.Tensor]) -> Optional[str]:
    """Why the file's output differs from the module's on ``feeds`` (None: it does not)."""
    import onnxruntime as ort

    if not repeatable(model, feeds[0]):
        return NOT_REPEATABLE

    try:
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        return f"ORT cannot load: {type(exc).__name__}"
    for x in feeds:
        with torch.no_grad():
            want = model(x).numpy()
        if not np.isfinite(want).all():     # torch's own output is not finite: drifttui refuses it (exit 2)
            return NOT_FINITE
        try:
            got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
        except Exception as exc:
            return f"ORT cannot run: {type(exc).__name__}"
        why = _differs(want, got)
        if why:
            return why
    return None


def _samples() -> list[torch.Tensor]:
    out = []
    for seed in range(3):
        torch.manual_seed(seed)
        out.append(rows())
    return out


def _drifts(model: nn.Module, path: Path, exporter: str) -> tuple[Optional[str], bool]:
    """(why the model's output differs on the 3 samples or None, whether ``body`` alone drifts on torch's own inputs
    to it: an own drift; else the stem's rounding amplified by the call)."""
    why = _runs(model, path, _samples())
    if why in (None, NOT_FINITE, NOT_REPEATABLE):
        return why, False
    with torch.no_grad():
        feeds = [model.stem(x) * 3.0 for x in _samples()]
    alone = path.with_name(path.stem + "-body.onnx")
    if _export(model.body, exporter, alone, feeds[0]):
        return why, True
    return why, _runs(model.body, alone, feeds) not in (None, NOT_FINITE, NOT_REPEATABLE)


def _cli(argv: list[str]) -> int:
    from drifttui.cli import main

    with _quiet():
        return main(argv)


_OPERATORS = {">>": "rshift", "<<": "lshift", "//": "floor_divide", "%": "remainder"}


def _called(call: str) -> set[str]:
    """The functions and operators a call's text names.  A call of the schema pool (``aten.elu.default(x, ...)``,
    ``A |> B``) names its ATen ops alone: an overload's name (``default``, ``dim``, ``Tensor``) and the argument's
    preparation (``x.abs()``) are not the call."""
    ops = set(re.findall(r"\baten\.([a-z_][a-z0-9_]*)\.[A-Za-z0-9_]+\(", call))
    if ops:
        return ops - _WORDS
    names = {w for w in re.findall(r"\b([a-z_][a-z0-9_]*)\(", call)} - {"x", "y", "m", "t", "tensor", "float"}
    names |= {w for w in re.findall(r"\.([a-z_][a-z0-9_]*)\b", call) if w not in {"values", "indices", "sigmoid"}}
    names |= {w for op, w in _OPERATORS.items() if op in call}
    return {w for w in names if len(w) > 2}


_WORDS = {"to", "or", "is", "as", "in", "and", "not"}      # ATen ops whose names are English words a message uses


def _told(message: str, call: str) -> bool:
    """Whether the message names a function or operator of the call (``F.logsigmoid`` as ``log_sigmoid``, ``>>``
    as ``__rshift__``; underscores aside)."""
    flat = message.replace("_", "")
    return any(re.search(rf"(?<![a-z]){re.escape(w.replace('_', ''))}(?![a-z])", flat) for w in _called(call))


SCREEN: collections.Counter = collections.Counter()      # per exporter: exported, drifts, own drifts, ...


def score(n: int, exporter: str, out: Path, control: bool, pool: str = "hand") -> Optional[dict[str, Any]]:
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    model, drawn = program(n, pool)
    path = out / f"p{n}-{exporter}.onnx"
    row: dict[str, Any] = {**drawn, "exporter": exporter}
    refused = _export(model, exporter, path)
    if refused:
        SCREEN[exporter, "refused"] += 1
        return None
    SCREEN[exporter, "exported"] += 1
    why, own = _drifts(model, path, exporter)
    broken = bool(why) and why.startswith("ORT cannot")        # an invalid file: no numbers to compare
    unscored = why in (NOT_FINITE, NOT_REPEATABLE)
    SCREEN[exporter, "torch not finite" if why == NOT_FINITE else "torch not repeatable" if why == NOT_REPEATABLE
           else "ORT refuses the file" if broken else "drifts" if why else "clean"] += 1
    SCREEN[exporter, "own drifts"] += bool(why) and not unscored and not broken and own
    if unscored or broken or (why is None and not control):
        return None
    row["screen"], row["own"] = why or "clean", own
    spec = f"{HERE}:{'schema' if pool == 'schema' else 'program'}_{n}"
    cfg = Config(model=spec, onnx=str(path), inputs=f"{HERE}:rows", samples=3)
    engine = Pipeline()
    t0 = time.perf_counter()
    try:
        with _quiet():
            run = engine.run(cfg)
            ex = engine.explain(run.result) if why else None
    except Exception as exc:
        row.update(crash=f"{type(exc).__name__}: {str(exc)[:80]}")
        return row
    res = run.result
    row["verdict"], row["seconds"] = res.verdict, round(time.perf_counter() - t0, 1)
    if why is None:
        row["ok"] = res.verdict == "ok"
        return row
    exp = ex.explanation
    head = exp.findings[0] if exp.findings else None
    row["found"] = res.verdict != "ok"
    row["origin"] = res.drift_origin.module if res.drift_origin is not None else "-"
    row["class"] = f"{head.check}/{head.kind}" if head else "-"
    row["verified"] = bool(head and head.verified)
    row["told"] = bool(head and _told(head.message, drawn["call"]))
    row["message"] = head.message if head else ""
    if not own:
        return row
    fixed = out / f"p{n}-{exporter}-fixed.onnx"
    common = [spec, "--inputs", f"{HERE}:rows", "--samples", "3"]
    rc = _cli(["repair", *common, "--onnx", str(path), "--out", str(fixed)])
    row["repair"] = rc == 0 and fixed.exists() and _cli(["check", *common, "--onnx", str(fixed)]) == 0
    return row


def _line(r: dict[str, Any]) -> str:
    head = f"p{r['n']:<4} {r['exporter']:11} {r['family']:21} {'deep' if r['deep'] else 'flat'} x{r['scale']:<7g}"
    if "crash" in r:
        return f"{head} CRASH {r['crash']}  [{r['call']}]"
    if r["screen"] == "clean":
        return f"{head} control {'ok' if r['ok'] else 'FALSE ALARM ' + r['verdict']}  [{r['call']}]"
    if not r["own"]:
        return (f"{head} amplified (body alone agrees): origin={r['origin']} {'ok' if r['origin'] == '-' else 'MISS'} "
                f"{r['class']}  [{r['call']}]  ({r['screen']})")
    return (f"{head} found={r['found']!s:5} origin={r['origin']:8} verified={r['verified']!s:5} "
            f"told={r['told']!s:5} repair={r['repair']!s:5} {r['class']:22} {r['seconds']:5}s  [{r['call']}]"
            f"  ({r['screen']})\n        {r['message'][:300]}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", type=int, default=1000)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--budget", type=float, default=1800.0, help="stop drawing after this many seconds")
    ap.add_argument("--controls", type=int, default=4, help="one clean program in this many is run as a control")
    ap.add_argument("--pool", choices=["hand", "schema"], default="hand",
                    help="hand: fuzz_ops.py's calls; schema: every ATen op the exporters lower (fuzz_schema.py)")
    args = ap.parse_args(argv)
    rows_: list[dict[str, Any]] = []
    t0, seen = time.perf_counter(), 0
    with tempfile.TemporaryDirectory(prefix="fuzz-drifts-") as d:
        for n in range(args.start, args.start + args.count):
            if time.perf_counter() - t0 > args.budget:
                print(f"budget spent after {seen} programs", flush=True)
                break
            seen += 1
            for exporter in ("torchscript", "dynamo"):
                r = score(n, exporter, Path(d), (n + (exporter == "dynamo")) % args.controls == 0, args.pool)
                if r is not None:
                    rows_.append(r)
                    print(_line(r), flush=True)
    drifts = [r for r in rows_ if r.get("screen") not in (None, "clean") and "crash" not in r and r["own"]]
    amplified = [r for r in rows_ if r.get("screen") not in (None, "clean") and "crash" not in r and not r["own"]]
    clean = [r for r in rows_ if r.get("screen") == "clean" and "crash" not in r]
    k = len(drifts)

    def tally(key: str, want: Any = True) -> str:
        return f"{sum(r.get(key) == want for r in drifts)}/{k}"

    print(f"\nprograms {seen} (x2 exporters); own drifts {k}; crashes {sum('crash' in r for r in rows_)}")
    print(f"found {tally('found')}, origin body {tally('origin', 'body')}, verified {tally('verified')}, "
          f"told {tally('told')}, repair passes check {tally('repair')}")
    print(f"amplified (the body alone agrees) {len(amplified)}: no origin named "
          f"{sum(r['origin'] == '-' for r in amplified)}/{len(amplified)}")
    print(f"controls {len(clean)}: ok {sum(r['ok'] for r in clean)}/{len(clean)}")
    for exporter in ("torchscript", "dynamo"):
        print(f"screen {exporter}: " + ", ".join(f"{k} {SCREEN[exporter, k]}" for k in (
            "exported", "refused", "ORT refuses the file", "clean", "drifts", "own drifts", "torch not finite",
            "torch not repeatable")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
