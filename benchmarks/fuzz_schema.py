"""The source-derived pool ``fuzz_drifts.py --pool schema`` draws from: every ATen op the exporters themselves say
they lower, called through its own schema, with arguments filled from the schema's types.

The hand pool (``fuzz_ops.py``) holds ~100 calls somebody picked; this one is picked by nobody:

* the op names are the ATen ops that torchlib registers (onnxscript's ``torch_lib`` registry and torch's own
  ``_torchlib`` ops: the dynamo exporter's lowerings) and those TorchScript's symbolic functions lower (each
  ``def name(g, ...)`` of ``torch.onnx.symbolic_opset*`` and the names its registry holds);
* each op's overloads (``torch.ops.aten.<name>.<overload>._schema``) are kept when every argument can be filled:
  a tensor is the body's input ``x`` or a form of it (a second branch ``y``, integers, a mask, a broadcast row or
  column), a list of tensors ``[x, y]``, a scalar from a small set of edge values, a dim, a bool, a dtype, a string
  from the literals the exporters' own sources compare that argument with (``rounding_mode == "floor"``), an
  optional one ``None`` or a value, one with a default its default or a value;
* an overload is skipped, with its reason counted, when it writes (in-place, ``out=``), is random (the
  ``nondeterministic_seeded`` tag), returns no tensor, takes no tensor (a factory), or takes an argument of a type
  with no value here (a generator, a device, a layout, ...), or its output's shape depends on the data; a private
  op (``_softmax``: internals that do not check their arguments) is skipped, and so is an op whose every one of 64
  probe draws torch rejects, or one of whose probe draws crashes the process (``native_batch_norm`` with
  ``training=False`` and no running statistics: a segfault).  The probe runs in child processes, restarted past such
  an op; the pool is cached in the temporary directory, keyed by this file and torch's version.

A draw is tried in torch on a probe of the body's input before it is used: one torch rejects, one whose output is
empty, complex or not finite, or one that differs from itself under ``torch.use_deterministic_algorithms`` (which
fills uninitialised memory: ``empty_like``) is drawn again.  Everything is seeded: the same ``n``, the same call.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fuzz_schema.py      # the pool's size and the skip counts
"""
from __future__ import annotations

import collections
import contextlib
import inspect
import hashlib
import importlib
import json
import logging
import os
import random
import re
import subprocess
import tempfile
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import torch

sys.path.insert(0, str(Path(__file__).parent))
from fuzz_ops import _other, back  # noqa: E402

ROWS, WIDTH, TRIES, PROBES = 6, 32, 12, 64
FLOATS = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, 1e-6, 1e4, -1e4, float("inf")]
INTS = [0, 1, 2, 3, -1, 7]
DIMS = [-1, 0, 1]
LISTS = [[-1], [0], [1], [2], [0, 1], [1, 2], [-1, 16], [2, 2], [3, 64]]
DIM_LISTS = [[-1], [0], [1], [0, 1]]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.bool]
# the tensors a call is given: (source text, from the body's input); views of x with more dims reach the ops on
# images and sequences (pooling, convolution, interpolation), y's transpose the matrix products
FIRST: list[tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = [
    ("x", lambda x: x), ("x", lambda x: x), ("x.abs()", lambda x: x.abs()),
    ("(x * 100).long()", lambda x: (x * 100).long()), ("x > 0", lambda x: x > 0),
    ("x.view(B, 2, 16)", lambda x: x.reshape(x.shape[0], 2, 16)),
    ("x.view(1, B, 4, 8)", lambda x: x.reshape(1, x.shape[0], 4, 8))]
OTHER = FIRST + [
    ("y", _other), ("y", _other), ("(y * 100).long()", lambda x: (_other(x) * 100).long()),
    ("y[:, :1]", lambda x: _other(x)[:, :1]), ("y[0]", lambda x: _other(x)[0]), ("y.t()", lambda x: _other(x).t())]
NO_VALUE = ("Generator", "Device", "Layout", "MemoryFormat", "Storage", "Stream", "Dimname", "complex", "Any")


def exporter_ops() -> dict[str, set[str]]:
    """ATen op name -> the exporters whose sources lower it (``torchlib``, ``torchscript``)."""
    from onnxscript.function_libs.torch_lib import registration

    importlib.import_module("onnxscript.function_libs.torch_lib.ops")      # registers the ops
    from torch.onnx._internal.exporter._torchlib import _torchlib_registry
    from torch.onnx._internal.torchscript_exporter import registration as ts_registration

    out: dict[str, set[str]] = collections.defaultdict(set)
    names = [q for q in registration.default_registry._registry]
    names += [str(m.fx_target).replace("aten.", "aten::", 1) for m in _torchlib_registry.get_torchlib_ops()]
    for q in names:
        if q.startswith("aten::"):
            out[q.split("::", 1)[1].split(".", 1)[0]].add("torchlib")
    for q in ts_registration.registry.all_functions():
        if q.startswith("aten::"):
            out[q.split("::", 1)[1]].add("torchscript")
    for opset in range(7, 21):
        module = __import__(f"torch.onnx.symbolic_opset{opset}", fromlist=["_"])
        for name, f in inspect.getmembers(module, inspect.isfunction):
            with contextlib.suppress(TypeError, ValueError):
                if list(inspect.signature(f).parameters)[:1] == ["g"]:
                    out[name].add("torchscript")
    return out


def _packet(name: str) -> Any:
    """``torch.ops.aten.<name>`` (a dunder symbolic's name ``__and_`` is ATen's ``__and__``)."""
    for cand in (name, name + "_" if name.startswith("__") and not name.endswith("__") else None):
        if cand and torch._C._jit_get_schemas_for_operator(f"aten::{cand}"):
            with contextlib.suppress(AttributeError, RuntimeError):
                return getattr(torch.ops.aten, cand)
    return None


def string_literals() -> dict[str, list[str]]:
    """Argument name -> the string literals the exporters' sources compare it with (``rounding_mode == "floor"``)."""
    import onnxscript.function_libs.torch_lib.ops as torchlib_ops
    import torch.onnx._internal.torchscript_exporter as ts

    files = sorted(Path(torchlib_ops.__file__).parent.glob("*.py")) + sorted(Path(ts.__file__).parent.glob("*.py"))
    found: dict[str, set[str]] = collections.defaultdict(set)
    pat = re.compile(r"\b([a-z_][a-z0-9_]*)\s*(?:==|!=|in)\s*(\(?(?:\s*[\"'][A-Za-z_-]+[\"']\s*,?)+\)?)")
    for f in files:
        for arg, lits in pat.findall(f.read_text()):
            found[arg].update(re.findall(r"[\"']([A-Za-z_-]+)[\"']", lits))
    return {k: sorted(v) for k, v in found.items()}


def _why_not(op: Any, strings: dict[str, list[str]]) -> Optional[str]:
    """Why an overload is not in the pool (None: it is)."""
    s = op._schema
    if s.is_mutable or any(a.alias_info is not None and a.alias_info.is_write for a in s.arguments):
        return "writes (in-place or out=)"
    if torch.Tag.nondeterministic_seeded in op.tags:
        return "random (nondeterministic_seeded)"
    if torch.Tag.dynamic_output_shape in op.tags or torch.Tag.data_dependent_output in op.tags:
        return "its output's shape or value depends on data (dynamic_output_shape)"
    if not s.returns or not str(s.returns[0].type).startswith("Tensor"):
        return "returns no tensor"
    if not any("Tensor" in str(a.type) for a in s.arguments):
        return "takes no tensor (a factory)"
    for a in s.arguments:
        real = str(a.real_type)
        if a.has_default_value() or real.startswith("Optional["):
            continue
        if any(k in real for k in NO_VALUE) or "Optional[Tensor]]" in real:
            return f"argument of type {real}"
        if real == "str" and not strings.get(a.name):
            return "a string argument with no literal in the exporters' sources"
    return None


@dataclass
class Drawn:
    text: str
    call: Callable[[torch.Tensor], torch.Tensor]


def _value(a: Any, r: random.Random, strings: dict[str, list[str]], first: bool) -> tuple[str, Any]:
    """(source text, value or a function of x) for one argument."""
    real = str(a.real_type)
    optional = real.startswith("Optional[")
    base = real[len("Optional["):-1] if optional else real
    no_value = any(k in base for k in NO_VALUE) or "Optional[Tensor]]" in base
    if optional and (no_value or r.random() < 0.5):
        return "None", None
    if a.has_default_value() and (no_value or r.random() < 0.5):
        return repr(a.default_value), a.default_value
    if base in ("Tensor",):
        text, f = r.choice(FIRST if first else OTHER)
        return text, f
    if base == "List[Tensor]":
        (t1, f1), (t2, f2) = r.choice(FIRST), r.choice(OTHER)
        return f"[{t1}, {t2}]", lambda x: [f1(x), f2(x)]
    if base == "ScalarType":
        d = r.choice(DTYPES)
        return str(d), d
    if base == "bool":
        v = r.choice([False, True])
        return repr(v), v
    if base == "str":
        v = r.choice(strings.get(a.name) or [a.default_value])
        return repr(v), v
    if base in ("List[int]", "List[SymInt]"):
        v = list(r.choice(DIM_LISTS if "dim" in a.name else LISTS))
        return repr(v), v
    if base == "List[float]":
        v = [r.choice(FLOATS[:7])]
        return repr(v), v
    if base in ("int", "SymInt"):
        v = r.choice(DIMS if "dim" in a.name else INTS)
        return repr(v), v
    if base == "float":
        v = r.choice(FLOATS)
        return repr(v), v
    if base in ("Scalar", "number"):
        v = r.choice(FLOATS + INTS)
        return repr(v), v
    raise LookupError(real)


def _fill(name: str, ovl: str, op: Any, r: random.Random, strings: dict[str, list[str]]) -> Drawn:
    pos: list[tuple[str, Any]] = []
    kw: list[tuple[str, str, Any]] = []
    first = True
    for a in op._schema.arguments:
        text, v = _value(a, r, strings, first)
        first = first and "Tensor" not in str(a.type)
        if a.kwarg_only:
            kw.append((a.name, text, v))
        else:
            pos.append((text, v))
    args = ", ".join([t for t, _ in pos] + [f"{k}={t}" for k, t, _ in kw])

    def call(x: torch.Tensor) -> torch.Tensor:
        ev = [v(x) if callable(v) else v for _, v in pos]
        kv = {k: (v(x) if callable(v) else v) for k, _, v in kw}
        out = op(*ev, **kv)
        return out[0] if isinstance(out, (tuple, list)) else out

    return Drawn(f"aten.{name}.{ovl}({args})", call)


@contextlib.contextmanager
def _deterministic() -> Any:
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was)


def probe(scale: float = 1.0) -> torch.Tensor:
    return torch.randn(ROWS, WIDTH, generator=torch.Generator().manual_seed(0)) * 3.0 * scale


def accepts(d: Drawn, x: torch.Tensor) -> bool:
    """Whether torch runs the draw on ``x`` to a finite, real, non-empty tensor, the same under deterministic
    algorithms (which fill uninitialised memory with NaN)."""
    x = x.detach().requires_grad_(x.is_floating_point())      # as the stem's output is: autograd sees the call
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = d.call(x)
            if not isinstance(y, torch.Tensor) or y.numel() == 0 or y.is_complex() or y.numel() > 1 << 16:
                return False
            with _deterministic():
                y2 = d.call(x)
            z = back(y, x, WIDTH)
    except Exception:
        return False
    return bool(torch.isfinite(z).all() and y2.shape == y.shape and torch.equal(y2.detach(), y.detach()))


def _verdict(name: str, strings: dict[str, list[str]], x: torch.Tensor) -> tuple[str, list[str]]:
    """(why op ``name`` is skipped, or "kept"; the overloads kept), counting each skipped overload's reason."""
    if name.startswith("_") and not name.startswith("__"):
        return "a private ATen op (internals that do not check their arguments)", []
    packet = _packet(name)
    if packet is None:
        return "no aten op of that name in torch", []
    ovls, why = [], []
    for o in sorted(packet.overloads()):
        reason = _why_not(getattr(packet, o), strings)
        why.append(f"overload: {reason}") if reason else ovls.append(o)
    r = random.Random(name)
    if not ovls:
        return "no overload whose schema can be filled", why
    ok = False
    for _ in range(PROBES):             # all of them: an op that crashes the process on some draw is seen here
        o = r.choice(ovls)
        ok = accepts(_fill(name, o, getattr(packet, o), r, strings), x) or ok
    return ("kept", ovls + why) if ok else ("torch rejects every draw (or it is nondeterministic)", why)


def _probe(path: Path) -> None:
    """The child's job: each op's verdict appended to ``path`` as a JSON line, a crash written first, so an op that
    crashes the process on a drawn argument (``native_batch_norm`` on a drawn running mean: a segfault; torch does
    not check a public op's arguments everywhere) is seen by the parent and left out."""
    logging.disable(logging.WARNING)
    done = {json.loads(line)["op"] for line in path.read_text().splitlines()} if path.exists() else set()
    strings, x = string_literals(), probe()
    with path.open("a") as f:
        for name in sorted(exporter_ops()):
            if name in done:
                continue
            f.write(json.dumps({"op": name, "verdict": "crashes torch (the process dies)"}) + "\n")
            f.flush()
            verdict, ovls = _verdict(name, strings, x)
            f.write(json.dumps({"op": name, "verdict": verdict, "overloads": ovls}) + "\n")
            f.flush()


def _cache() -> Path:
    key = hashlib.sha256(Path(__file__).read_bytes() + torch.__version__.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"fuzz-schema-pool-{key}.jsonl"


Pool = tuple[list[tuple[str, list[tuple[str, Any]]]], dict[str, list[str]], collections.Counter]
_POOL: Optional[Pool] = None


def pool() -> Pool:
    """(sorted [(op name, [(overload, OpOverload)])], the string literals, the skip counts); probed once in child
    processes (restarted past an op that crashes one), cached in the temporary directory by this file and torch."""
    global _POOL
    if _POOL is None:
        path, work = _cache(), _cache().with_suffix(".part")
        while not path.exists():
            size = work.stat().st_size if work.exists() else 0
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
            done = subprocess.run([sys.executable, __file__, "--probe", str(work)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
            if done:
                work.rename(path)
            elif not work.exists() or work.stat().st_size == size:
                raise RuntimeError(f"probing the schema pool makes no progress: {sys.executable} {__file__} --probe")
        last: dict[str, dict[str, Any]] = {}
        for line in path.read_text().splitlines():
            row = json.loads(line)
            last[row["op"]] = row
        kept, why = [], collections.Counter()
        for name, row in sorted(last.items()):
            why.update(o for o in row.get("overloads", []) if o.startswith("overload: "))
            if row["verdict"] == "kept":
                packet = _packet(name)
                kept.append((name, [(o, getattr(packet, o)) for o in row["overloads"] if ":" not in o]))
            else:
                why[f"op: {row['verdict']}"] += 1
        _POOL = (kept, string_literals(), why)
    return _POOL


_DRAWS: dict[int, tuple[str, str, Callable[[Any], Any], float]] = {}


def draw_seed(n: int) -> tuple[str, str, Callable[[Any], Any], float]:
    """``draw(random.Random(n))``, drawn once per process (drifttui loads a program's model several times)."""
    if n not in _DRAWS:
        _DRAWS[n] = draw(random.Random(n))
    return _DRAWS[n]


def draw(r: random.Random) -> tuple[str, str, Callable[[Any], Any], float]:
    """(family: the op, source text, call, input scale), as ``fuzz_ops.draw``; one draw in three chains two calls."""
    scale = r.choice([1.0, 1.0, 10.0, 100.0, 1e4])
    first = _one(r, scale)
    if r.random() >= 1 / 3:
        return first[0], first[1].text, first[1].call, scale
    second = _one(r, scale, first[1].call)
    c1, c2 = first[1].call, second[1].call
    return (f"{first[0]}+{second[0]}", f"{first[1].text} |> {second[1].text}",
            lambda x: c2(back(c1(x), x, WIDTH)), scale)


def _one(r: random.Random, scale: float, before: Optional[Callable[[Any], Any]] = None) -> tuple[str, Drawn]:
    kept, strings, _ = pool()
    x = probe(scale)
    if before is not None:
        x = back(before(x), x, WIDTH).detach()
    while True:
        name, ovls = r.choice(kept)
        for _ in range(TRIES):
            d = _fill(name, *r.choice(ovls), r, strings)
            if accepts(d, x):
                return name, d


def main() -> int:
    kept, strings, why = pool()
    ops = exporter_ops()
    both = sum(ops[n] == {"torchlib", "torchscript"} for n, _ in kept)
    print(f"ops the exporters' sources name: {len(ops)}; kept {len(kept)} ({both} lowered by both), "
          f"{sum(len(o) for _, o in kept)} overloads")
    for reason, k in sorted(why.items(), key=lambda kv: -kv[1]):
        print(f"  skipped {k:4}  {reason}")
    print("string literals:", {k: v for k, v in strings.items() if k in ("rounding_mode", "approximate", "reduce")})
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:
        _probe(Path(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
