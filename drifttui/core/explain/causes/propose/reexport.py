"""Re-export patches: the origin module alone, exported on its captured inputs.

If the origin module, exported by itself with the other exporter (or, for a file the user
gave, with today's exporters on the runtime input shapes), computes what torch computes in
ONNX Runtime, the cause is the export path of the file under test and the fix names the
export that works.  Costs one small export per variant; tried only when no graph patch
verifies.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, NamedTuple, Optional

import numpy as np

from drifttui.core.explain.causes.propose.candidates import module_eps
from drifttui.core.explain.causes.propose.definitions import Told, told
from drifttui.core.explain.causes.locate.case import Case, call_io, torch_values
from drifttui.core.runtime.torch_hooks import to_numpy
from drifttui.core.explain.causes.locate.evaluate import Eval, error, run_ort
from drifttui.core.explain.causes.locate.fx_localise import describe, program_targets
from drifttui.core.prepare.reference import file_exporter
from drifttui.core.onnx.edit.absorbed_views import FORWARD
from drifttui.core.onnx.edit.graft import Graft
from drifttui.core.explain.causes.locate.localise_nodes import align
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.io import copy_model
from drifttui.core.model.export import export_model
from drifttui.core.model.retrace import defined_ops
from drifttui.core.result import display_name
from drifttui.errors import DriftTuiError


class Variant(NamedTuple):
    """One way to export the origin module alone: an exporter, its opset, torch's own decompositions."""

    exporter: str
    why: str
    opset: Optional[int] = None
    decompose: bool = False
    retrace: bool = False         # re-traced into core ATen by make_fx first (core/model/retrace.py)
    optimize: bool = True         # False: the dynamo exporter's ONNX optimizer left out

    def fix(self, opset: Optional[int], target: str = "") -> str:
        at = f" at opset {opset}" if opset else ""
        if self.retrace:
            what = f"{target} written in core ATen ops" if target else "the module re-traced into core ATen ops"
            return (f"export through another route ({what}, exported by the {self.exporter} exporter{at}, "
                    "computes what torch computes): re-trace with `torch.fx.experimental.proxy_tensor.make_fx("
                    "model, decomposition_table=...)` or replace the call by its definition, then "
                    f"`torch.onnx.export(..., dynamo={self.exporter == 'dynamo'})`; report the lowering"
                    f"{' of ' + target if target else ''} to torch.onnx with `drifttui repro`")
        if not self.optimize:
            return ("export without the exporter's ONNX optimizer (its rewrites change what the graph computes: "
                    "an elementwise op it took for an identity, a constant folded otherwise): "
                    f"`torch.onnx.export(..., dynamo=True, optimize=False)`{at}; report it to onnxscript "
                    "(the optimizer) with `drifttui repro`")
        if self.decompose:
            what = f"torch's own decomposition of {target}" if target else "torch's own decompositions"
            return (f"decompose before exporting ({what} is right where the exporter's lowering is not): "
                    f"`ep = torch.export.export(model, args).run_decompositions(torch.export.default_decompositions())`"
                    f", then `torch.onnx.export(ep, args, dynamo=True)`{at}; report the lowering"
                    f"{' of ' + target if target else ''} to torch.onnx / onnxscript with `drifttui repro`")
        if self.opset is not None:
            return (f"export with --exporter {self.exporter} and `torch.onnx.export(..., opset_version={self.opset})`"
                    f" (the lowering at that opset is right)")
        return f"export with --exporter {self.exporter}{at}"


MAX_VARIANTS = 7          # re-exports tried per origin, cheapest and likeliest first
TORCHSCRIPT_TOP = 20      # the newest opset the TorchScript exporter lowers to


def variants(ctx: Any) -> list[Variant]:
    """The re-exports to try, in order, at most MAX_VARIANTS: the other exporter (both of today's for
    a file the user exported), the dynamo exporter after torch's core ATen decompositions (another
    lowering path than torchlib's hand-written one), the module re-traced into core ATen by make_fx
    and exported by each exporter (for lowerings no exporter, opset or torch decomposition gets right:
    retrace.py), the TorchScript exporter at its newest opset, and last the dynamo exporter without its
    ONNX optimizer (a drift its rewrites made: an Add of a tiny constant taken for an identity)."""
    if ctx.cfg.onnx:
        out = [Variant("dynamo", "today's dynamo exporter on the runtime input shapes"),
               Variant("torchscript", "the TorchScript exporter on the runtime input shapes")]
    else:
        other = "torchscript" if ctx.cfg.exporter == "dynamo" else "dynamo"
        out = [Variant(other, f"the {other} exporter")]
    out.append(Variant("dynamo", "the dynamo exporter after torch's core ATen decompositions", decompose=True))
    out.append(Variant("torchscript", "the TorchScript exporter after a make_fx re-trace into core ATen",
                       retrace=True))
    out.append(Variant("dynamo", "the dynamo exporter after a make_fx re-trace into core ATen", retrace=True))
    if not (ctx.cfg.exporter == "torchscript" and not ctx.cfg.onnx and ctx.index.opset == TORCHSCRIPT_TOP):
        out.append(Variant("torchscript", f"the TorchScript exporter at opset {TORCHSCRIPT_TOP}", opset=TORCHSCRIPT_TOP))
    if ctx.cfg.onnx or ctx.cfg.exporter == "dynamo":
        out.append(Variant("dynamo", "the dynamo exporter without its ONNX optimizer", optimize=False))
    return out[:MAX_VARIANTS]


def try_reexport(ctx: Any, case: Case, variant: Variant, loc: Any = None) -> tuple[Optional[Patch], Eval]:
    module = ctx.modules().get(case.module)
    io = call_io(ctx, case)
    if module is None or io is None:
        return None, Eval(float("inf"), True, False, "the origin's inputs could not be captured")
    ins, outs = _plain(io[0]), io[1]
    exporter, why = variant.exporter, variant.why
    with tempfile.TemporaryDirectory(prefix="drifttui-reexport-") as d:
        try:
            path = export_model(module, tuple(ins), {}, exporter, Path(d), "origin.onnx", opset=variant.opset,
                                decompose=variant.decompose, retrace=variant.retrace, optimize=variant.optimize)
            import onnx

            model = onnx.load(str(path))
        except (DriftTuiError, Exception) as exc:  # noqa: BLE001 - a module that does not export alone
            return None, Eval(float("inf"), True, False, str(exc)[:200])
    ev = _run(model, ins, outs, case)
    if not ev.ok:
        return None, ev
    feeds_names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    feeds = {n: t.detach().cpu().numpy() for n, t in zip(feeds_names, ins)}
    opset = next((i.version for i in model.opset_import if i.domain in ("", "ai.onnx")), None)
    spec = {"op": "reexport", "module": case.module, "exporter": exporter, "opset": opset,
            "input_shapes": [list(t.shape) for t in ins], **({"decompose": "core_aten"} if variant.decompose else {}),
            **({"retrace": "make_fx_core_aten"} if variant.retrace else {}),
            **({"optimize": False} if not variant.optimize else {})}
    fx = getattr(loc, "fx", None)
    wrong = fx.wrong if fx is not None and getattr(loc, "kind", "") != "runtime" else None
    if wrong is not None:       # a dynamo file: its FX values named the wrong node (fx_localise)
        node = next(n for n in case.model.graph.node if n.name == wrong.nodes[-1])
        check, said = _fx_story(case, module, fx, ctx, variant)
    else:
        node = mistranslated(case, model, feeds) if ev.ok and not ev.fails else None
        check, said = _story(case, module, node, ctx, variant)
    target = (wrong.target if wrong is not None else ", ".join(decomposed_targets(ctx, case, variant))
              if variant.decompose or variant.retrace else "")
    own = _defined(ctx, case, variant, wrong)       # through drifttui's own definition of the op: its story
    if own is not None:
        check, said = own.check, own.why
    patch = Patch(spec, check, f"{said}{display_name(case.module)} exported alone with {why} (opset {opset}) computes what "
                  "torch computes", (own.fix if own is not None else variant.fix(opset, target))
                  + (" and dynamic shapes for the sizes that change at run time" if ctx.cfg.onnx else "")
                  + " (`drifttui repair` grafts that export into the file)",
                  "export", module=case.module,
                  nodes=list(wrong.nodes) if wrong is not None else [node.name] if node is not None else [],
                  graft=_graft(ctx, case, model, list(feeds.values())))
    return patch, ev


def _defined(ctx: Any, case: Case, variant: Variant, wrong: Any) -> Optional[Told]:
    """A re-trace's story when it went through drifttui's own definition of the op (definitions.py): the
    op the FX values name, else the first op of the module's program that drifttui defines (the node
    over the tolerance may be a Log after an erfc that cancelled to 0)."""
    if not variant.retrace:
        return None
    made_by = file_exporter(ctx.index, ctx.cfg.exporter) if ctx.cfg.onnx else ctx.cfg.exporter
    return told(([wrong.target] if wrong is not None else []) + decomposed_targets(ctx, case, variant), made_by)


# the class of a verified re-export follows from what it changed: the lowering of the node (or the
# ATen op) it computes otherwise; the lowerings of these ops have classes of their own
_CLASS = {"Resize": "interpolation", "Upsample": "interpolation", "AveragePool": "padding", "Pad": "padding",
          "MaxPool": "padding", "LayerNormalization": "normalization", "BatchNormalization": "normalization",
          "InstanceNormalization": "normalization", "GroupNormalization": "normalization"}
_ATEN_CLASS = (("upsample", "interpolation"), ("interpolate", "interpolation"), ("grid_sampler", "interpolation"),
               ("_norm", "normalization"), ("pad", "padding"), ("pool", "padding"))


def lowering_class(target: str, op_types: list[str]) -> str:
    """The class of a wrong lowering: by the ATen op torch called, else by the ONNX nodes it became
    (a Resize's story is interpolation's), else ``lowering``."""
    name = target.split(".")[1] if target.startswith("aten.") and "." in target else target
    hit = next((c for key, c in _ATEN_CLASS if key in name), None)
    return hit or next((_CLASS[o] for o in op_types if o in _CLASS), "lowering")


def _story(case: Case, module: Any, node: Any, ctx: Any, variant: Optional[Variant] = None) -> tuple[str, str]:
    """(class, what the file gets wrong) for a verified re-export: an epsilon of the module held by a
    constant of the file, the one node where the values part from the re-export's, or neither."""
    eps = _eps_constant(case, module)
    if eps is not None:
        value, name, reader = eps
        return "normalization", (f"the file applies {case.module}'s eps={value:g} (constant {name} read by "
                                 f"{reader.op_type} {reader.name}) otherwise than torch; ")
    lost = _dropped_eps(case, module)
    if lost is not None:
        at = f" (the first node whose value the re-export never computes: {node.op_type} {node.name})" if node else ""
        return "normalization", (f"{type(lost[1]).__name__} {case.module}'s eps={lost[0]:g} is in no constant or "
                                 f"attribute of the file: the export dropped it{at}; ")
    if node is not None and node.name.rsplit("/", 1)[-1].startswith(FORWARD) and ctx.index.is_static(node.input[0]):
        cls, said = _by_variant(case, ctx, variant)     # a weight module's result folded into a constant
        return cls, (f"{said[:-2]}; the file holds {case.module or '(root)'}'s result as the constant "
                     f"{node.input[0]}, folded at export time from those lowerings; ")
    if variant is not None and variant.retrace and node is not None:
        cls, said = _by_variant(case, ctx, variant)     # the ATen op by its definition: name it
        if said:
            return cls, f"{said[:-2]} (the first node it computes otherwise: {node.op_type} {node.name}); "
    if node is not None:
        return lowering_class("", [node.op_type]), (
            f"{node.op_type} {node.name} computes something else than torch: the one node of "
            f"{case.module or '(root)'} whose value the re-export never computes while its inputs match; ")
    return _by_variant(case, ctx, variant)


def _by_variant(case: Case, ctx: Any, variant: Optional[Variant]) -> tuple[str, str]:
    """(class, story) when the re-export verifies and no single node tells why: by what the verifying
    re-export changed.  Today's same exporter on a user's file: the file was made otherwise
    (``versions``: another torch, an edit).  Another exporter, opset or torch's decompositions: the
    file's exporter lowers the module's torch calls otherwise than torch (``lowering``), naming the
    ATen ops the decomposition re-lowered."""
    made_by = file_exporter(ctx.index, ctx.cfg.exporter) if ctx.cfg.onnx else ctx.cfg.exporter
    if variant is None or (ctx.cfg.onnx and variant.exporter == made_by and not variant.decompose
                           and not variant.retrace and variant.opset is None):
        return ("versions" if ctx.cfg.onnx else "lowering"), ""
    name = display_name(case.module)
    if not variant.optimize:
        return "lowering", (f"the dynamo exporter's ONNX optimizer rewrote {name}'s lowered graph into one that "
                            "computes otherwise than torch (an op taken for an identity, a constant folded otherwise); ")
    if variant.decompose or variant.retrace:
        ops = decomposed_targets(ctx, case, variant)
        how = ("its definition in core ATen ops, re-traced by make_fx and exported by the "
               f"{variant.exporter} exporter," if variant.retrace else "torch's own decomposition of it")
        if ops:
            return lowering_class(ops[0], []), (f"the {made_by} exporter's lowering of {', '.join(ops)} (called by "
                                                f"{name}) computes otherwise than torch, {how} does not; ")
    return "lowering", f"the {made_by} exporter's lowering of {name}'s torch calls computes otherwise than torch; "


def decomposed_targets(ctx: Any, case: Case, variant: Optional[Variant] = None) -> list[str]:
    """The ATen ops of the origin's torch program that torch's core ATen table decomposes (the ones the
    decomposition variant lowers otherwise than the exporter did), at most 3.  For a re-trace, the ops
    it defines itself (retrace.defined_ops) first: torch decomposes them nowhere."""
    import torch

    table = {str(k) for k in torch.export.default_decompositions().keys()}
    targets = program_targets(ctx, case)
    own = [t for t in targets if t in defined_ops()] if variant is not None and variant.retrace else []
    return (own + [t for t in targets if t in table and t not in own])[:3]


def _fx_story(case: Case, module: Any, fx: Any, ctx: Any, variant: Optional[Variant] = None) -> tuple[str, str]:
    """(class, what the file gets wrong) from the node the FX values name as wrong (an epsilon held
    by a constant of the file still says so first); when the export without the ONNX optimizer is the
    one that verifies, the optimizer changed the lowered graph, not the lowering of that node."""

    eps = _eps_constant(case, module)
    if eps is not None:
        return _story(case, module, None, ctx)
    wrong = fx.wrong
    if variant is not None and not variant.optimize:
        return "lowering", (f"{describe(fx, case.module)}: not torch's {wrong.target} lowered otherwise but the "
                            "exporter's ONNX optimizer, whose rewrites dropped or changed a node of the lowered graph "
                            "before it (an op taken for an identity: an Add of a tiny constant); ")
    return (lowering_class(wrong.target, wrong.op_types),
            f"{describe(fx, case.module)}: the exporter's lowering of torch's {wrong.target} is wrong; ")


def _eps_constant(case: Case, module: Any) -> Optional[tuple[float, str, Any]]:
    from onnx import numpy_helper

    want = module_eps(module)
    if not want:
        return None
    consts = {t.name: numpy_helper.to_array(t) for t in case.model.graph.initializer if t.ByteSize() < 512}
    for n in case.model.graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].HasField("t"):
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    for n in case.model.graph.node:
        for v in n.input:
            arr = consts.get(v)
            if arr is None or arr.size != 1 or arr.dtype.kind != "f":
                continue
            x = float(arr.ravel()[0])
            hit = next((e for e in want if abs(x - e) <= 1e-6 * e or abs(x - e * e) <= 1e-6 * e * e), None)
            if hit is not None:
                return hit, v, n
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


def mistranslated(case: Case, witness: Any, witness_feeds: dict[str, np.ndarray]) -> Optional[Any]:
    """The origin's node the verified re-export (a graph that computes what torch computes) says
    is wrong: aligned by values, both fed the torch-side inputs (localise_nodes.align)."""
    try:
        mine = run_ort(case.model, case.feeds, [v for n in case.model.graph.node for v in n.output if v])
        theirs = run_ort(witness, witness_feeds, [v for n in witness.graph.node for v in n.output if v])
    except Exception:  # noqa: BLE001 - no story, the re-export still verifies
        return None
    return align(case.model, mine, case.feeds, theirs, [o.name for o in witness.graph.output], case.atol,
                 case.rtol)


def _plain(ins: list[Any]) -> list[Any]:
    """The captured call inputs as ordinary tensors: the capture runs under ``torch.inference_mode``,
    and a module with parameters that need grad cannot be traced or exported on inference tensors
    ("Inference tensors cannot be saved for backward")."""
    return [t.clone() if getattr(t, "is_inference", lambda: False)() else t for t in ins]


def _graft(ctx: Any, case: Case, model: Any, arrays: list[np.ndarray]) -> Any:
    """How ``repair`` puts the re-export into the file: the file's value of each call input and
    output ("" when the file has none: then it cannot be grafted), the origin's nodes to replace."""
    cm = ctx.plan.calls[case.call]
    inputs = [cm.inputs.get(k) or _same_value(case, arrays[k]) or _enclosing_input(ctx, case, arrays[k]) or ""
              for k in range(len(arrays))]
    baked = [k for k, v in enumerate(inputs) if not v and _is_state(ctx, arrays[k])]
    if baked:
        model = _bake_inputs(model, baked, arrays)
        inputs = [v for k, v in enumerate(inputs) if k not in baked]
    outputs = [cm.outputs.get(k, "") for k in range(len(model.graph.output))]
    return Graft(model, inputs, outputs, list(case.nodes))


def _enclosing_input(ctx: Any, case: Case, arr: np.ndarray) -> Optional[str]:
    """The file value of an enclosing call's input that holds ``arr``: a call input read only by the
    origin's children (its first child's Gemm reads it) is paired with the outermost call it enters."""
    chain, p = [], ctx.calls[case.call].parent
    while p is not None:
        chain.append(p)
        p = ctx.calls[p].parent
    wanted = {c: sorted(ctx.plan.calls[c].inputs) for c in chain if ctx.plan.calls[c].inputs}
    if not wanted:
        return None
    store = torch_values(ctx, ctx.sample(case.sample), {}, wanted)
    for c, positions in wanted.items():
        for pos in positions:
            t = store.inp.get((c, pos))
            if t is not None and tuple(t.shape) == arr.shape and np.array_equal(to_numpy(t), arr):
                return ctx.plan.calls[c].inputs[pos]
    return None


def _is_state(ctx: Any, arr: np.ndarray) -> bool:
    """``arr`` is a parameter or buffer of the model (a call input the file folded into a constant,
    e.g. a module's ``offsets`` buffer): the same in every sample, so the graft may hold it."""
    root = ctx.modules().get("")
    if root is None:
        return False
    for t in (*root.parameters(), *root.buffers()):
        if tuple(t.shape) == arr.shape and np.array_equal(t.detach().cpu().numpy(), arr):
            return True
    return False


def _bake_inputs(model: Any, positions: list[int], arrays: list[np.ndarray]) -> Any:
    """A copy of ``model`` whose graph inputs at ``positions`` (among the non-initializer inputs)
    are initializers holding ``arrays``."""
    from onnx import numpy_helper

    out = copy_model(model)
    init = {t.name for t in out.graph.initializer}
    feeds = [i for i in out.graph.input if i.name not in init]
    drop = {feeds[k].name for k in positions if k < len(feeds)}
    for k in positions:
        if k < len(feeds):
            out.graph.initializer.append(numpy_helper.from_array(arrays[k], feeds[k].name))
    keep = [i for i in out.graph.input if i.name not in drop]
    del out.graph.input[:]
    out.graph.input.extend(keep)
    return out


def _same_value(case: Case, arr: np.ndarray) -> Optional[str]:
    """The origin's input value that holds ``arr`` (a call input the plan ties to another call's
    output carries the same torch tensor)."""
    hits = [k for k, v in case.feeds.items() if v.shape == arr.shape and np.array_equal(v, arr)]
    return hits[0] if len(hits) == 1 else None


def _run(model: Any, ins: list[Any], outs: list[np.ndarray], case: Case) -> Eval:
    feeds_names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    feeds = {n: t.detach().cpu().numpy() for n, t in zip(feeds_names, ins)}
    try:
        got = run_ort(model, feeds)
    except Exception as exc:  # noqa: BLE001
        return Eval(float("inf"), True, False, str(exc)[:200])
    names = [o.name for o in model.graph.output]
    return error({f"o{k}": got[n] for k, n in enumerate(names)}, {f"o{k}": a for k, a in enumerate(outs)},
                 case.atol, case.rtol)


def error_on(ctx: Any, case: Case, patch: Patch) -> Optional[Eval]:
    """The re-export of ``patch`` run on ``case``'s sample (its torch-side call inputs and outputs)."""
    io = call_io(ctx, case)
    if io is None or patch.graft is None:
        return None
    return _run(patch.graft.model, io[0], io[1], case)
