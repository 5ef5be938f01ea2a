"""What a verified re-export tells: the class and the story of the cause it verified.

The class follows from what the re-export changed, never from the first op recognised: an epsilon of
the module held by a constant of the file (or dropped by the export), the one node whose value the
re-export never computes, the ATen op torch's decomposition or drifttui's definition re-lowered, the
dynamo exporter's ONNX optimizer or the TorchScript exporter's peephole pass, or, for a user's file re-exported by today's same exporter,
another version (``versions``).  ``lowering_class`` is the class of a wrong lowering by the ATen op
torch called.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.fx_words import describe
from drifttui.core.explain.causes.locate.torch_program import (call_args, called_targets, program_targets,
                                                              undecomposed_calls)
from drifttui.core.explain.causes.propose.edits.candidates import module_eps
from drifttui.core.model.retrace import defined_ops, definition_of
from drifttui.core.onnx.edit.absorbed_views import FORWARD
from drifttui.core.prepare.reference import run_exporter
from drifttui.core.result import display_name
from drifttui.core.onnx.weights import read_tensor


# the class of a verified re-export follows from what it changed: the lowering of the node (or the
# ATen op) it computes otherwise; the lowerings of these ops have classes of their own
_CLASS = {"Resize": "interpolation", "Upsample": "interpolation", "AveragePool": "padding", "Pad": "padding",
          "MaxPool": "padding", "LayerNormalization": "normalization", "BatchNormalization": "normalization",
          "InstanceNormalization": "normalization", "GroupNormalization": "normalization"}
_ATEN_CLASS = (("upsample", "interpolation"), ("interpolate", "interpolation"), ("grid_sampler", "interpolation"),
               ("_norm", "normalization"), ("pad", "padding"), ("pool", "padding"))


_REWRITES = "an op taken for an identity, a constant folded otherwise"   # when the two graphs' ops do not tell


def lowering_class(target: str, op_types: list[str]) -> str:
    """The class of a wrong lowering: by the ATen op torch called, else by the ONNX nodes it became
    (a Resize's story is interpolation's), else ``lowering``."""
    name = target.split(".")[1] if target.startswith("aten.") and "." in target else target
    hit = next((c for key, c in _ATEN_CLASS if key in name), None)
    return hit or next((_CLASS[o] for o in op_types if o in _CLASS), "lowering")


def story(case: Case, module: Any, node: Any, ctx: Any, variant: Any = None, change: str = "") -> tuple[str, str]:
    """(class, what the file gets wrong) for a verified re-export: an epsilon of the module held by a
    constant of the file, the one node where the values part from the re-export's, or neither."""
    eps = _eps_constant(case, module)
    if eps is not None:
        value, name, reader = eps
        return "normalization", (f"the file applies {display_name(case.module)}'s eps={value:g} (constant {name} read by "
                                 f"{reader.op_type} {reader.name}) otherwise than torch; ")
    at = f" (the first node whose value the re-export never computes: {node.op_type} {node.name})" if node else ""
    lost = _dropped_eps(case, module)
    if lost is not None:
        return "normalization", (f"{type(lost[1]).__name__} {display_name(case.module)}'s eps={lost[0]:g} is in no "
                                 f"constant or attribute of the file: the export dropped it{at}; ")
    passed = _dropped_eps_argument(ctx, case)
    if passed is not None:
        e, target = passed
        return lowering_class(target, []), (
            f"its {target.split('.')[1]} call passes eps={e:g}, which no constant or attribute of the file holds: "
            f"the {run_exporter(ctx.index, ctx.cfg)} exporter's lowering of it leaves the eps out of where torch uses "
            f"it{at}; ")
    if node is not None and node.name.rsplit("/", 1)[-1].startswith(FORWARD) and ctx.index.is_static(node.input[0]):
        cls, said = _by_variant(case, ctx, variant, change)     # a weight module's result folded into a constant
        return cls, (f"{said[:-2]}; the file holds {case.module or '(root)'}'s result as the constant "
                     f"{node.input[0]}, folded at export time from those lowerings; ")
    if variant is not None and (variant.retrace or not variant.optimize or not variant.peephole) and node is not None:
        cls, said = _by_variant(case, ctx, variant, change)    # the ATen op by its definition; the optimizer's rewrite
        if said:
            return cls, f"{said[:-2]} (the first node it computes otherwise: {node.op_type} {node.name}); "
    if node is not None:
        return lowering_class("", [node.op_type]), (
            f"{node.op_type} {node.name} computes something else than torch: the one node of "
            f"{case.module or '(root)'} whose value the re-export never computes while its inputs match; ")
    return _by_variant(case, ctx, variant, change)


def _by_variant(case: Case, ctx: Any, variant: Any, change: str = "") -> tuple[str, str]:
    """(class, story) when the re-export verifies and no single node tells why: by what the verifying
    re-export changed.  Today's same exporter on a user's file: the file was made otherwise
    (``versions``: another torch, an edit).  Another exporter, opset or torch's decompositions: the
    file's exporter lowers the module's torch calls otherwise than torch (``lowering``), naming the
    ATen ops the decomposition re-lowered."""
    made_by = run_exporter(ctx.index, ctx.cfg)
    if variant is None or getattr(variant, "same", False):
        return ("versions" if ctx.cfg.onnx else "lowering"), ""
    name = display_name(case.module)
    if not variant.optimize:
        return "lowering", (f"the dynamo exporter's ONNX optimizer rewrote {name}'s lowered graph into one that "
                            f"computes otherwise than torch ({change or _REWRITES}); ")
    if not variant.peephole:
        return "lowering", (f"the TorchScript exporter's ONNX peephole pass rewrote {name}'s lowered graph into one "
                            f"that computes otherwise than torch ({change}), while the same export without the pass "
                            "computes what torch computes; ")
    if variant.decompose or variant.retrace:
        relowered = list(getattr(variant, "relower", ()))      # torch's own decomposition of the op named wrong
        ops = relowered + [t for t in decomposed_targets(ctx, case, variant) if t not in relowered]
        how = ("torch's own decomposition of it" if relowered or not variant.retrace else "its definition in core ATen "
               "ops") + (f", re-traced by make_fx and exported by the {variant.exporter} exporter," if variant.retrace
                         else "")
        if ops:
            return lowering_class(ops[0], []), (f"the {made_by} exporter's lowering of {', '.join(ops)} (called by "
                                                f"{name}) computes otherwise than torch, {how} does not; ")
    return "lowering", f"the {made_by} exporter's lowering of {name}'s torch calls computes otherwise than torch; "


def decomposed_targets(ctx: Any, case: Case, variant: Any = None) -> list[str]:
    """The ATen ops of the origin's torch program that torch's core ATen table decomposes (the ones the
    decomposition variant lowers otherwise than the exporter did), at most 3.  For a re-trace, the ops
    it defines itself (retrace.defined_ops) first, named as the module called them (``aten.std.correction``,
    not the ``prims.var`` torch decomposed it into)."""
    import torch

    table = {str(k) for k in torch.export.default_decompositions().keys()}
    targets = program_targets(ctx, case)
    own = ([t for t in called_targets(ctx, case) if t in defined_ops() and fits(ctx, case, t)]
           if variant is not None and variant.retrace else [])
    return (own + [t for t in targets if t in table and t not in own])[:3]


def fits(ctx: Any, case: Case, target: str) -> bool:
    """Whether drifttui's definition of ``target`` is about this call: an avg_pool's only where a call
    passes divisor_override, a bilinear resize's only of a uint8 image (the definitions leave every other
    call to the exporter)."""
    d = definition_of(target)
    guard = d.guard if d is not None else None
    return guard is None or any(guard(a, k) for a, k in call_args(ctx, case, target))


def fx_story(case: Case, module: Any, fx: Any, ctx: Any, variant: Any = None, change: str = "") -> tuple[str, str]:
    """(class, what the file gets wrong) from the node the FX values name as wrong (an epsilon held
    by a constant of the file still says so first); when the export without the ONNX optimizer is the
    one that verifies, the optimizer changed the lowered graph, not the lowering of that node."""

    eps = _eps_constant(case, module)
    if eps is not None:
        return story(case, module, None, ctx)
    wrong = fx.wrong
    if variant is not None and not variant.optimize:
        return "lowering", (f"{describe(fx, case.module)}: not torch's {wrong.target} lowered otherwise but the "
                            "exporter's ONNX optimizer, whose rewrites dropped or changed a node of the lowered graph "
                            f"({change or _REWRITES}); ")
    if wrong.overflow:      # the function, in a form that overflows in float32 (overflow.py)
        return "stability", (f"{describe(fx, case.module)}: the exporter's lowering of torch's {wrong.target} is the "
                             f"function in a form that is not stable in float32: {wrong.overflow} overflows to inf "
                             "on finite inputs where torch's value is finite, and is torch's wherever it is finite; ")
    return (lowering_class(wrong.target, wrong.op_types),
            f"{describe(fx, case.module)}: the exporter's lowering of torch's {wrong.target} is wrong; ")


def _scalar_constants(case: Case) -> dict[str, float]:
    """The case's one-element float constants (small initializers and Constant nodes), by value name."""
    tensors = {t.name: t for t in case.model.graph.initializer if t.ByteSize() < 512}
    tensors.update({n.output[0]: n.attribute[0].t for n in case.model.graph.node
                    if n.op_type == "Constant" and n.attribute and n.attribute[0].HasField("t")})
    held = {}
    for name, t in tensors.items():
        arr = read_tensor(t)
        if arr.size == 1 and arr.dtype.kind == "f":
            held[name] = float(arr.ravel()[0])
    return held


def _eps_constant(case: Case, module: Any) -> Optional[tuple[float, str, Any]]:
    want = module_eps(module)
    if not want:
        return None
    consts = _scalar_constants(case)
    for n in case.model.graph.node:
        for v in n.input:
            if v not in consts:
                continue
            x = consts[v]
            hit = next((e for e in want if abs(x - e) <= 1e-6 * e or abs(x - e * e) <= 1e-6 * e * e), None)
            if hit is not None:
                return hit, v, n
    return None


def _held_eps(case: Case) -> list[float]:
    """The ``epsilon`` attributes and the one-element float constants of the case."""
    from onnx import helper

    held = [float(helper.get_attribute_value(a)) for n in case.model.graph.node for a in n.attribute
            if a.name == "epsilon"]
    return held + list(_scalar_constants(case).values())


def _argument(target: str, args: tuple, kwargs: dict, name: str) -> Any:
    """The value of the ATen op ``target``'s argument ``name`` in one call (its default when not passed)."""
    import torch

    parts = target.split(".")
    try:
        op = getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2] if len(parts) > 2 else "default")
        arguments = op._schema.arguments
    except (AttributeError, IndexError, RuntimeError):
        return None
    for k, a in enumerate(arguments):
        if a.name == name:
            return kwargs.get(name, args[k] if k < len(args) else a.default_value if a.has_default_value() else None)
    return None


def _dropped_eps_argument(ctx: Any, case: Case) -> Optional[tuple[float, str]]:
    """(eps, the ATen op) when a torch call of the origin passes an ``eps`` argument (its default included)
    that neither a constant nor an ``epsilon`` attribute of the case holds, nor its square (TorchScript's
    ``pairwise_distance`` drops the eps torch adds to the difference).  A batch norm's eps is folded into the
    Conv before it, so is never looked for."""
    held = None
    for target, args, kwargs in undecomposed_calls(ctx, case):
        if "batch_norm" not in target:
            e = _argument(target, args, kwargs, "eps")
            if not isinstance(e, (int, float)) or isinstance(e, bool) or e <= 0:
                continue
            held = _held_eps(case) if held is None else held
            if not any(abs(h - e) <= 1e-6 * e or abs(h - e * e) <= 1e-6 * e * e for h in held):
                return float(e), target
    return None


def _dropped_eps(case: Case, module: Any) -> Optional[tuple[float, Any]]:
    """(eps, the module holding it) when a module of the origin has an eps that neither a constant
    nor an ``epsilon`` attribute of the case holds (TorchScript drops PairwiseDistance's)."""
    if module is None:
        return None
    from onnx import helper

    held = [float(helper.get_attribute_value(a)) for n in case.model.graph.node for a in n.attribute
            if a.name == "epsilon"]
    for m in module.modules():
        e = getattr(m, "eps", None)
        if not isinstance(e, (int, float)) or isinstance(e, bool) or e <= 0 or "BatchNorm" in type(m).__name__:
            continue                 # a BatchNorm's eps is folded into the Conv before it
        if _eps_constant(case, m) is None and not any(abs(h - e) <= 1e-6 * e for h in held):
            return float(e), m
    return None


__all__ = ["decomposed_targets", "fits", "fx_story", "lowering_class", "story"]
