"""The constants of an activation computed in reduced precision against the module's own: is the GELU's
0.044715, its 1/sqrt(2), a HardSigmoid's slope in the file the model's?

An exporter writes a GELU as a pattern of elementwise nodes (``Div``/``Erf``/``Add``/``Mul``, or
``Pow``/``Mul``/``Tanh``...) whose constants are inputs, not attributes: nothing declares them by name
(attr_check.py reads torch.nn's attributes, attr_probe.py a ``Gelu`` node's form).  A constant changed
after the deployment tool moves such a layer by less than its precision budget when the layer computes
in float16 or int8 (issue 33: a GPT-2 float16 GELU, the QDQ / QOperator GELUs of BERT, ViT, ConvNeXt), so
the numbers cannot name it.  So the module is exported alone, by the exporter that wrote the file, on a
probe of its input's shape; that reference is the same pattern of compute nodes as the file's call
(core/onnx/pattern.py walks both through the tool's precision nodes), and each constant of the file is
compared with the constant at the same place of the reference.  The rounding the file's format does to a
constant is not a difference: a float16 constant is the reference's rounded to float16 (or clamped to the
converter's range), an int8 one within half its scale, a float attribute within 1e-4 of it.

Checked: leaf modules without parameters whose call has reduced-precision nodes of its own and at least
one float constant or float attribute among its compute nodes (an activation computing with constants);
each distinct module (type and probe output) is exported once per preparation.  A call whose pattern does
not match the reference (ORT fused it, the quantizer dropped a node, another exporter) has no evidence.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import SCALAR_FLOAT_ELEMS
from drifttui.core.model.export import export_model
from drifttui.core.onnx.graph import DYNAMO, TORCHSCRIPT, build_index
from drifttui.core.onnx.pattern import Const, Pair, compute_nodes, match
from drifttui.core.prepare.plan.plan import AttrCheck

_REL = 1e-4            # as attr_check.py: a float constant equal up to float32's rounding and a margin
_F16_RANGES = ((1e-7, 1e4), (5.96e-08, 65504.0))    # the float16 converters' clamps (onnxconverter-common, ORT's)


def _rounding_of(found: Const, want: np.ndarray) -> np.ndarray:
    """Per element: what the file's storage of the constant may legitimately move it by."""
    r = np.abs(want)
    if found.fmt == "float16":
        return np.maximum(r * 2.0 ** -11, 2.0 ** -25) * 1.01
    if found.fmt == "bfloat16":
        return r * 2.0 ** -8 * 1.01
    return np.full_like(r, found.step * 1.01)


def _clamped(found: np.ndarray, want: np.ndarray) -> bool:
    """A float16 converter's clamp of values outside its range (its documented behaviour, not a drift)."""
    for low, high in _F16_RANGES:
        c = np.sign(want) * np.clip(np.abs(want), low, high)
        c = np.where(want == 0, 0.0, c).astype(np.float16).astype(np.float64)
        if np.all(np.abs(found - c) <= np.abs(c) * 2.0 ** -11 * 1.01):
            return True
    return False


def differs(pair: Pair) -> Optional[tuple[str, str]]:
    """(the file's value, the module's) as text when the pair differs by more than a rounding; else None."""
    f, w = pair.found, pair.want
    if isinstance(f, str) or isinstance(w, str):
        return None if f == w else (repr(f), repr(w))
    if isinstance(f, float) and isinstance(w, float):
        return None if abs(f - w) <= _REL * max(abs(w), 1e-30) else (f"{f:.6g}", f"{w:.6g}")
    if not isinstance(f, Const) or not isinstance(w, Const) or "int" in (f.fmt, w.fmt):
        return None            # an integer tensor (a shape, an axis): structural, not a constant of the math
    a, b = f.value.reshape(-1), w.value.reshape(-1)
    if a.size != b.size or not np.all(np.isfinite(a)) or not np.all(np.isfinite(b)):
        return None
    if np.all(np.abs(a - b) <= _REL * np.abs(b) + _rounding_of(f, b)) or (f.fmt == "float16" and _clamped(a, b)):
        return None
    text = lambda v: f"{v[0]:.6g}" if v.size == 1 else np.array2string(v[:8], precision=6)  # noqa: E731
    return f"{text(a)} ({f.fmt})", text(b)


def _with_constants(index: Any, nodes: set[int]) -> bool:
    """A float attribute or a float constant input among ``nodes`` (cheap: before any export)."""
    for k in nodes:
        node = index.nodes[k]
        if any(a.type == 1 for a in node.proto.attribute):
            return True
        for name in node.inputs:
            t = index.constant_tensor(name) if name else None
            if t is None and name in index.producer:
                src = index.nodes[index.producer[name]]
                t = index.constant_tensor(src.inputs[0]) if src.op_type in ("QuantizeLinear", "DequantizeLinear",
                                                                            "Cast") and src.inputs else None
            if t is not None and t.data_type in SCALAR_FLOAT_ELEMS:
                return True
    return False


def _activation(module: Any, call: Any) -> bool:
    """A leaf module without parameters of one floating input (an activation computing with constants)."""
    if module is None or list(module.children()) or any(True for _ in module.parameters()):
        return False
    return len(call.inputs) == 1 and len(call.outputs) == 1 and call.inputs[0].dtype == "float32"


class References:
    """Each distinct module exported alone (once per preparation), as a GraphIndex."""

    def __init__(self, index: Any, workdir: Path) -> None:
        self.exporters = [index.flavour] if index.flavour in (DYNAMO, TORCHSCRIPT) else [TORCHSCRIPT, DYNAMO]
        self.opset = index.opset
        self.folder = workdir / "activation-references"
        self.cache: dict[tuple, Any] = {}

    def of(self, module: Any, shape: tuple[int, ...], exporter: str) -> Optional[Any]:
        import torch

        n = int(np.prod(shape)) if shape else 1
        x = torch.linspace(-4.0, 4.0, max(n, 1), dtype=torch.float32).reshape(shape)
        try:
            with torch.no_grad():
                y = module(x.clone())
        except Exception:       # noqa: BLE001 - not an elementwise activation on this probe: no evidence
            return None
        if not isinstance(y, torch.Tensor):
            return None
        key = (type(module), exporter, tuple(shape), hashlib.sha1(y.detach().numpy().tobytes()).hexdigest())
        if key not in self.cache:
            self.cache[key] = self._export(module, x, exporter, len(self.cache))
        return self.cache[key]

    def _export(self, module: Any, x: Any, exporter: str, k: int) -> Optional[Any]:
        import onnx

        self.folder.mkdir(parents=True, exist_ok=True)
        for opset in dict.fromkeys((self.opset, None)):
            try:
                path = export_model(module, (x,), {}, exporter, self.folder, name=f"act{k}.onnx", opset=opset)
                return build_index(onnx.load(str(path)), path)
            except Exception:   # noqa: BLE001 - the module alone does not export: no evidence
                continue
        return None


def _checks(index: Any, pairs: list[Pair], label: str, exporter: str) -> list[AttrCheck]:
    out = []
    for p in pairs:
        d = differs(p)
        if d is None:
            continue
        node = index.nodes[p.node]
        attr = f"constant {p.what}" if p.what.startswith("input ") else p.what
        restore = p.want if not p.what.startswith("input ") else None
        out.append(AttrCheck(f"{node.op_type} node {node.name}", attr, d[0],
                             f"{d[1]} there ({label} exported alone by {exporter}: the same place of its pattern)",
                             p.node, restore=restore, floor=False, tensor=_restorable(index, p)))
    return out


def _restorable(index: Any, p: Pair) -> Optional[tuple[str, str, tuple[int, ...], tuple[float, ...]]]:
    """(the constant's tensor, its dtype, its shape, the module's values) when ``repair`` can put it back: a
    float tensor read by this node alone (a shared one is named, not changed under its other readers)."""
    f = p.found
    if getattr(f, "fmt", "") not in ("float32", "float16", "float64") or not f.name \
            or len(index.consumers.get(f.name, [])) != 1:
        return None
    return f.name, f.fmt, tuple(f.value.shape), tuple(float(v) for v in p.want.value.reshape(-1))


def const_checks(index: Any, calls: list[Any], plan: Any, model: Any, reduced: Any, workdir: Path,
                 skip: Any = ()) -> dict[int, list[AttrCheck]]:
    """Call -> the constants of its activation that are not the module's (``reduced``: the file's
    reduced-precision nodes; ``skip``: calls that already have attribute evidence)."""
    if model is None or not plan.localized or not reduced:
        return {}
    mods = dict(model.named_modules())
    refs = References(index, workdir)
    out: dict[int, list[AttrCheck]] = {}
    for cm in plan.calls:
        call = calls[cm.call]
        value = cm.outputs.get(0)
        if cm.call in skip or value is None or not any(k in reduced for k in cm.own) \
                or not _activation(mods.get(call.module), call):
            continue
        own = compute_nodes(index, cm.own)
        if not own or not _with_constants(index, own):
            continue
        for exporter in refs.exporters:
            ref = refs.of(mods[call.module], tuple(call.inputs[0].shape), exporter)
            pairs = match(index, own, value, ref, range(len(ref.nodes)), ref.graph_outputs[0]) \
                if ref is not None and ref.graph_outputs else None
            if pairs is not None:
                found = _checks(index, pairs, call.module or "(root)", exporter)
                if found:
                    out[cm.call] = found
                break
    return out
