"""Is a ``--baseline`` a report of the same run? (issue 22, item 6)

A baseline carries a known drift so that CI fails only on a new or worse one. A baseline of
another model would carry the wrong drift, and let a drifting run pass. :func:`mismatch`
compares what identifies a run, from the two reports alone (old baselines included):

- the model spec: the example, the model file's name and function (folders may differ between
  CI checkouts), or the class of a Python object;
- the input spec: a ``shape:`` spec exactly, an inputs file by name, or both defaults;
- the graph's signature: the module calls (name, class, call), the model outputs (name, shape)
  and the ONNX op types the run mapped. Weights are not in it: a retrained model of the same
  architecture still matches its baseline;
- for a file with int8 ops, the processor's int8 kernel (issue 36: ORT's u8s8 products saturate on
  x86 without VNNI, so the same file's errors differ between processors): a baseline made on other
  kernels, or one that does not record them (schema_version 1), is not this run's.

It returns the first difference as one line ("" when the baseline matches).
"""
from __future__ import annotations

import os
from typing import Optional

from drifttui.core.result import Result


def _spec(spec: Optional[str], example: Optional[str] = None) -> str:
    if example:
        return f"example:{example}"
    if not spec:
        return "-"
    if spec.startswith(("example:", "shape:")):
        return spec
    if spec.startswith("python-object:"):
        return "python object " + spec.split(":", 1)[1].split("#")[0]
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier():          # file.py:fn or pkg.mod:fn
        return f"{os.path.basename(head)}:{tail}"
    return os.path.basename(spec)            # a TorchScript / .pt2 / inputs file


def _modules(result: Result) -> list[tuple[str, str, int]]:
    return [(L.module, L.cls, L.call) for L in result.layers]


def _op_types(result: Result) -> set[str]:
    return {op for L in result.layers for op in L.op_types}


def _first_module_difference(run: list, base: list) -> str:
    for i, (a, b) in enumerate(zip(run, base)):
        if a != b:
            return (f"module call #{i} is {a[0] or '(root)'} ({a[1]}) in this run, "
                    f"{b[0] or '(root)'} ({b[1]}) in the baseline")
    longer, n = ("this run", len(run)) if len(run) > len(base) else ("the baseline", len(base))
    return f"{longer} has {n} module calls, the other {min(len(run), len(base))}"


def mismatch(result: Result, base: Result) -> str:
    """The first way ``base`` is not a report of this run ("" when it is)."""
    rc, bc = result.config, base.config
    model, base_model = _spec(rc.model, rc.example), _spec(bc.model, bc.example)
    if model != base_model:
        return f"the model differs: {model} in this run, {base_model} in the baseline"
    inputs, base_inputs = _spec(rc.inputs), _spec(bc.inputs)
    if inputs != base_inputs:
        return f"the inputs differ: {inputs} in this run, {base_inputs} in the baseline"
    outputs = [(o.name, list(o.shape)) for o in result.outputs]
    base_outputs = [(o.name, list(o.shape)) for o in base.outputs]
    if outputs != base_outputs:
        return (f"the model outputs differ: {', '.join(f'{n} {s}' for n, s in outputs)} in this run, "
                f"{', '.join(f'{n} {s}' for n, s in base_outputs)} in the baseline")
    rated = [o.name for o, b in zip(result.outputs, base.outputs) if (o.top1_agreement is None) != (b.top1_agreement is None)]
    if rated:               # a classifier output is one by its shape: a missing figure would hide a fall
        return f"output {rated[0]} has a top-1 agreement in one report and none in the other"
    if result.layers and base.layers and _modules(result) != _modules(base):
        return "the module calls differ: " + _first_module_difference(_modules(result), _modules(base))
    ops, base_ops = _op_types(result), _op_types(base)
    if ops and base_ops and ops != base_ops:
        only = sorted(ops - base_ops)
        gone = sorted(base_ops - ops)
        parts = ([f"{', '.join(only[:4])} only in this run"] if only else []) + \
                ([f"{', '.join(gone[:4])} only in the baseline"] if gone else [])
        return "the ONNX graphs differ: op types " + "; ".join(parts)
    return cpu_difference(result, base)


def cpu_difference(result: Result, base: Result) -> str:
    """An int8 file's baseline made on a processor with other int8 kernels ("" when the same)."""
    if result.precision is None or not result.precision.kernels:
        return ""
    here, there = result.environment.int8_kernel, base.environment.int8_kernel
    if not there:
        return (f"this int8 file's errors depend on the processor's int8 kernels ({here} here) and the "
                "baseline does not record its processor (a report older than schema_version 2): write it "
                "again with this drifttui on the processor you compare on")
    if here != there:
        return (f"the baseline ran on other int8 kernels: {here} in this run ({result.environment.cpu}), "
                f"{there} in the baseline ({base.environment.cpu}); int8 results differ between them "
                "(docs/deploy.md, \"int8 and the processor\"): write the baseline on this processor")
    return ""


# --- the figures the gate compares (issue 34, item 1) -------------------------------------------------
# A baseline's NaN made every ``new > old * 1.1`` false, and a drifting run passed.  Every figure the
# gate reads from a baseline must be a finite number in its range, or the baseline is refused (exit 2).


def _number(value: object, where: str, low: float = 0.0, high: float = float("inf")) -> str:
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{where} is {type(value).__name__} {value!r:.40}, not a number"
    if math.isnan(value):
        return f"{where} is NaN"
    if math.isinf(value):
        return f"{where} is {'-' if value < 0 else ''}Infinity"
    if not low <= value <= high:
        return f"{where} is {value!r}, outside {low:g}..{high:g}" if high != float("inf") else \
            f"{where} is {value!r}, negative"
    return ""


def _origin_unmeasured(base: Result) -> bool:
    """A drift origin without metrics of its own (a packed weight that is not the model's) has max |d| NaN."""
    o = base.drift_origin
    layer = next((L for L in base.layers if L.index == o.layer), None) if o is not None else None
    return layer is not None and layer.metrics is None


def bad_figure(base: Result) -> str:
    """The first figure of ``base`` the gate compares that is missing, of the wrong type, NaN,
    Infinity or out of range, named by its JSON field ("" when every one is sound)."""
    if isinstance(base.samples, bool) or not isinstance(base.samples, int):
        return f"samples is {type(base.samples).__name__} {base.samples!r:.40}, not an integer"
    if base.samples < 1:
        return f"samples is {base.samples}, not a positive count"
    tol = base.tolerance
    checks: list[tuple[object, str, float, float]] = [
        (getattr(tol, "atol", None), "tolerance.atol", 0.0, float("inf")),
        (getattr(tol, "rtol", None), "tolerance.rtol", 0.0, float("inf"))]
    o = base.drift_origin
    if o is not None and not (_origin_unmeasured(base) and _is_nan(o.max_abs)):
        checks.append((o.max_abs, "drift_origin.max_abs", 0.0, float("inf")))
    for i, out in enumerate(base.outputs):
        m = getattr(out, "metrics", None)
        checks.append((getattr(getattr(m, "max_abs", None), "worst", None), f"outputs[{i}].metrics.max_abs.worst",
                       0.0, float("inf")))
        if out.top1_agreement is not None:
            checks.append((out.top1_agreement, f"outputs[{i}].top1_agreement", 0.0, 1.0))
        if not isinstance(out.fails, bool):
            return f"outputs[{i}].fails is {type(out.fails).__name__} {out.fails!r:.40}, not true/false"
    for value, where, low, high in checks:
        problem = _number(value, where, low, high)
        if problem:
            return problem
    return ""


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and value != value
