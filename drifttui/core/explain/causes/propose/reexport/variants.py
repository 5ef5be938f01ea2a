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

from drifttui.core.explain.causes.propose.reexport.aliasing import aliased_told
from drifttui.core.explain.causes.propose.reexport.definitions import Told, told
from drifttui.core.explain.causes.propose.reexport.dynamic_lowering import dynamic_lowering
from drifttui.core.explain.causes.propose.reexport.edited import (OTHER_WEIGHTS, edited_story, keeps_its_state,
                                                                 whole_export_is_the_file)
from drifttui.core.explain.causes.propose.reexport.graft_inputs import graft_for
from drifttui.core.explain.causes.propose.reexport.frozen_trace import dynamic_dims, frozen_story
from drifttui.core.explain.causes.propose.reexport.narrow_graft import narrowed
from drifttui.core.explain.causes.propose.reexport.optimizer_diff import FOLDED, export_change
from drifttui.core.explain.causes.propose.reexport.pass_rewrite import Rewrite, pass_rewrite
from drifttui.core.explain.causes.propose.reexport.pinned_opset import pinned_story
from drifttui.core.explain.causes.propose.siblings import sibling_grafts
from drifttui.core.explain.causes.propose.reexport.story import decomposed_targets, fits, fx_story, story
from drifttui.core.explain.causes.propose.reexport.train_mode import trained, trained_story
from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.case import Case, call_io
from drifttui.core.explain.causes.locate.evaluate import Eval, error, run_ort
from drifttui.core.prepare.reference import run_exporter
from drifttui.core.explain.causes.locate.localise_nodes import align
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.model.export import export_model
from drifttui.core.model.retrace import relowerable, torch_decomposition
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
    script: bool = False          # compiled by torch.jit.script first: Python control flow kept in the graph
    peephole: bool = True         # False: the TorchScript exporter's ONNX peephole pass left out (model/peephole.py)
    same: bool = False            # a user's file: its own exporter at its own opset (edited.py: a file made otherwise)
    relower: tuple = ()           # a re-trace's ATen ops also decomposed by torch's own decomposition (_relowering)

    def fix(self, opset: Optional[int], target: str = "", change: str = "") -> str:
        """The source change that avoids the drift; ``change``: what the optimizer changed, when told."""
        at = f" at opset {opset}" if opset else ""
        if self.retrace:
            what = f"{target} written in core ATen ops" if target else "the module re-traced into core ATen ops"
            what = (f"torch's own decomposition of {', '.join(self.relower)} (`torch._decomp.decomposition_table`)"
                    if self.relower else what)
            return (f"export through another route ({what}, exported by the {self.exporter} exporter{at}, "
                    "computes what torch computes): re-trace with `torch.fx.experimental.proxy_tensor.make_fx("
                    "model, decomposition_table=...)` or replace the call by its definition, then "
                    f"`torch.onnx.export(..., dynamo={self.exporter == 'dynamo'})`; report the lowering"
                    f"{' of ' + target if target else ''} to torch.onnx with `drifttui repro`")
        if not self.optimize:
            what = (change.split(" otherwise than ")[0] + " otherwise" if change.startswith(FOLDED) else
                    "its rewrites change what the graph computes: an elementwise op it took for an identity, a "
                    "constant folded otherwise")
            return (f"export without the exporter's ONNX optimizer ({what}): "
                    f"`torch.onnx.export(..., dynamo=True, optimize=False)`{at}; report it to onnxscript "
                    "(the optimizer) with `drifttui repro`")
        if not self.peephole:
            return ("the TorchScript exporter's ONNX peephole pass (its fusions run after every call is lowered, "
                    "and torch.onnx.export has no switch for them) changes what the graph computes: export with "
                    "`torch.onnx.export(..., dynamo=True)`, which has no such pass, or keep the fused pattern "
                    "apart in the model (a `.clone()` between the two calls); report the pass's rewrite to "
                    "pytorch with `drifttui repro`")
        if self.script:
            return ("script the module (`torch.jit.script(model)`, then `torch.onnx.export(..., dynamo=False)`): "
                    "its Python `if` / numbers taken from tensors become the "
                    "graph's own If and computation, where a trace keeps the example's; or write the branch as "
                    "`torch.where` / `torch.cond` and export with the dynamo exporter")
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


TRACED = "the file's exporter"     # frozen_trace's probe: exported with the file's dynamic dims
MAX_VARIANTS = 8          # re-exports tried per origin, cheapest and likeliest first
TORCHSCRIPT_TOP = 20      # the newest opset the TorchScript exporter lowers to


def variants(ctx: Any) -> list[Variant]:
    """The re-exports to try, in order, at most MAX_VARIANTS: for a dynamo file, first the dynamo exporter
    without its ONNX optimizer (a drift its rewrites made is told as the optimizer's, with what it changed:
    optimizer_diff.py, before another exporter's lowering verifies it too), for a TorchScript file first the
    TorchScript exporter without its ONNX peephole pass (its fusions, told the same way: pass_rewrite.py), then for a
    file pinned at an older opset the same exporter one opset up (``next_opset``); the other exporter (both of
    today's for a file the user exported), the dynamo exporter after torch's core ATen decompositions (another
    lowering path than torchlib's hand-written one), the module re-traced into core ATen by make_fx
    and exported by each exporter (for lowerings no exporter, opset or torch decomposition gets right:
    retrace.py), the TorchScript exporter at its newest opset, and last, for a file TorchScript made, the
    dynamo exporter without its ONNX optimizer.  Third, the
    module compiled by ``torch.jit.script`` (a trace keeps the example's branch of a Python ``if``; the scripted
    graph keeps the ``If``), with the dims the file declares dynamic: for a TorchScript trace or a file with a
    dynamic dim only (what a trace may have frozen)."""
    unoptimized = Variant("dynamo", "the dynamo exporter without its ONNX optimizer", optimize=False)
    unfused = Variant("torchscript", "the TorchScript exporter without its ONNX peephole pass", peephole=False)
    if ctx.cfg.onnx:       # first the file's own exporter at its own opset: a file made otherwise (edited.py)
        other = "torchscript" if _traced(ctx).exporter == "dynamo" else "dynamo"
        out = [own_variant(ctx), Variant(other, f"the {other} exporter on the runtime input shapes")]
        if _traced(ctx).exporter == "dynamo":      # the optimizer's rewrite, told before another exporter's
            out.insert(1, unoptimized)
    else:
        other = "torchscript" if ctx.cfg.exporter == "dynamo" else "dynamo"
        out = ([unoptimized] if ctx.cfg.exporter == "dynamo" else []) + [Variant(other, f"the {other} exporter")]
    if _traced(ctx).exporter == "torchscript":       # the peephole's rewrite, told before another exporter's
        at = 1 if ctx.cfg.onnx else 0
        out.insert(at, unfused)
        pinned = next_opset(ctx)
        if pinned is not None:        # a pinned opset: the same exporter one opset up, before another exporter
            out.insert(at + 1, pinned)
    if _traced(ctx).exporter == "torchscript" or ctx.index.has_dynamic_inputs:
        out.append(Variant("torchscript", "the TorchScript exporter on the module compiled by torch.jit.script",
                           script=True))     # a trace, or a dynamic dim: what a trace may have frozen
    out.append(Variant("dynamo", "the dynamo exporter after torch's core ATen decompositions", decompose=True))
    out.append(Variant("torchscript", "the TorchScript exporter after a make_fx re-trace into core ATen",
                       retrace=True))
    out.append(Variant("dynamo", "the dynamo exporter after a make_fx re-trace into core ATen", retrace=True))
    if ctx.index.opset != TORCHSCRIPT_TOP or not (ctx.cfg.exporter == "torchscript" if not ctx.cfg.onnx
                                                  else _traced(ctx).exporter == "torchscript"):
        out.append(Variant("torchscript", f"the TorchScript exporter at opset {TORCHSCRIPT_TOP}", opset=TORCHSCRIPT_TOP))
    if ctx.cfg.onnx and unoptimized not in out:
        out.append(unoptimized)
    return out[:MAX_VARIANTS]


def own_variant(ctx: Any) -> Variant:
    """A user's file's own exporter at the file's own opset (TorchScript lowers to each opset natively; the dynamo
    exporter at its own), on the runtime input shapes: when it computes what torch computes, the file is not what
    that exporter writes (edited.py)."""
    made_by = _traced(ctx).exporter
    opset = ctx.index.opset if made_by == "torchscript" and isinstance(ctx.index.opset, int) else None
    at = f" at the file's opset {opset}" if opset else ""
    return Variant(made_by, f"today's {made_by} exporter{at} on the runtime input shapes", opset=opset, same=True)


def unedited_witness(ctx: Any, exporter: str) -> bool:
    """Whether a verified re-export by ``exporter`` is another exporter's than the file's while the file is what its
    own exporter writes (drifttui's own export: no file given; else the whole model exported by the file's exporter
    at its opset computes what the file computes).  A number such a witness holds otherwise is where the two
    exporters' lowerings part, not a number changed in the file (``constants.witness_constant_patches``)."""
    own = own_variant(ctx)
    if not exporter or exporter == own.exporter:
        return False
    return not ctx.cfg.onnx or whole_export_is_the_file(ctx, lambda m, i: _export(m, i, own))


def next_opset(ctx: Any) -> Optional[Variant]:
    """A TorchScript file pinned below the newest opset: the same exporter one opset up (an older opset's symbolic takes
    another path where the opset lacks an op or a type: integer Max / Clip / Pow from 12), the smallest raise."""
    opset = ctx.index.opset
    ok = bool(ctx.cfg.onnx) and isinstance(opset, int) and 7 <= opset < TORCHSCRIPT_TOP
    return Variant("torchscript", f"the TorchScript exporter at opset {opset + 1}, the next above the file's {opset}",
                   opset=opset + 1) if ok else None


def try_reexport(ctx: Any, case: Case, variant: Variant, loc: Any = None) -> tuple[Optional[Patch], Eval]:
    module = ctx.modules().get(case.module)
    io = call_io(ctx, case)
    if module is None or io is None:
        return None, Eval(float("inf"), True, False, "the origin's inputs could not be captured")
    ins, outs = _plain(io[0]), io[1]
    module = as_called(ctx, case.call, module, ctx.sample(case.sample))     # called with kwargs: as it was
    variant = _relowering(variant, loc, module, ins)        # the op named wrong by torch's own decomposition
    dims = dynamic_dims(ctx, case, ins)
    try:
        model = _export(module, ins, variant, dims)
    except (DriftTuiError, Exception) as exc:  # noqa: BLE001 - a module that does not export alone
        return None, Eval(float("inf"), True, False, str(exc)[:200])
    ev = _run(model, ins, outs, case)
    if not ev.ok or (variant.same and _computes(ev) and not keeps_its_state(module, ins)):   # other numbers
        return None, ev if not ev.ok else Eval(float("inf"), True, False, OTHER_WEIGHTS)
    rewrite = (pass_rewrite(case, model, variant, lambda v: _export(module, ins, v, dims),
                            lambda m: _computes(_run(m, ins, outs, case)), _feeds(model, ins))
               if _computes(ev) else Rewrite(variant))
    if rewrite.variant is None:
        return None, Eval(float("inf"), True, False, "the same export with the left-out pass computes what torch "
                          "computes too (or does not export): the pass is not the cause")
    variant, feeds = rewrite.variant, _feeds(model, ins)
    opset = next((i.version for i in model.opset_import if i.domain in ("", "ai.onnx")), None)
    spec = {"op": "reexport", "module": case.module, "exporter": variant.exporter, "opset": opset,
            "input_shapes": [list(t.shape) for t in ins], **({"decompose": "core_aten"} if variant.decompose else {}),
            **({"retrace": "make_fx_core_aten"} if variant.retrace else {}),
            **({"optimize": False} if not variant.optimize else {}), **({"script": True} if variant.script else {}),
            **({"peephole": False} if not variant.peephole else {}), **_relowered_spec(variant)}
    check, said, node, wrong = _story(ctx, case, module, model, feeds, ev, variant, loc, rewrite)
    target = (wrong.target if wrong is not None else ", ".join(_relowered_or(ctx, case, variant))
              if variant.decompose or variant.retrace else "")
    own = _defined(ctx, case, variant, wrong) or aliased_told(ctx, case, variant)   # drifttui's definition; aliasing
    own = own or (trained_story(ctx, case, module, ins) if _computes(ev) else None)     # exported in train()
    if own is None and _computes(ev) and not variant.retrace:      # a trace that froze its example (frozen_trace)
        own = frozen_story(ctx, case, module, ins, outs, lambda m, i: _export(m, i, _traced(ctx), dims),
                           lambda m, i, o: _run(m, i, o, case))
    sized = (dynamic_lowering(ctx, case, module, ins, outs, variant, lambda m, i: _export(m, i, _traced(ctx), dims),
                              lambda m, i, o: _run(m, i, o, case), getattr(loc, "torch_op", None))
             if own is None and _computes(ev) else None)    # static: a lowering on a dynamic size?
    own = own or sized or (edited_story(ctx, case, node, variant.opset, lambda m, i: _export(m, i, variant))
                           if variant.same and _computes(ev) else None)
    if own is not None:
        check, said = own.check, own.why
    spec.update(_changed(ctx, sized, own))      # what changed: the sizes, the mode (source_fix's code)
    patch = Patch(spec, check, f"{said}{display_name(case.module)} exported alone with {variant.why} (opset {opset}) computes what "
                  "torch computes", (own.fix if own is not None else variant.fix(opset, target, rewrite.said))
                  + ("; keep the file's dynamic shapes for the sizes that change at run time"
                     if ctx.cfg.onnx and ctx.index.has_dynamic_inputs and sized is None
                     and (own is None or own.check in ("lowering", "stability")) else "")
                  + " (`drifttui repair` grafts that export into the file)",
                  "export", module=case.module,
                  nodes=list(wrong.nodes) if wrong is not None else [node.name] if node is not None else [],
                  graft=graft_for(ctx, case, model, list(feeds.values())), torch_op=own.op if own is not None else None)
    if _computes(ev) and patch.graft is not None and all(patch.graft.inputs):    # same code in every block
        patch.graft.narrow = narrowed(ctx, case, patch.graft, feeds)      # a unit verified far above its member
        patch.graft.siblings = sibling_grafts(
            ctx, case, lambda m, i: _export(m, i, variant, dims), lambda c, m, a: graft_for(ctx, c, m, a),
            lambda m, i, o, c: _computes(_run(m, i, o, c)))
    return patch, ev


def _relowering(variant: Variant, loc: Any, module: Any, ins: list[Any]) -> Variant:
    """A re-trace also re-lowers the op the localisation names wrong (a dynamo file's FX node wrong on its own,
    ``fx_localise``) through torch's own decomposition
    of it, where torch's core table and drifttui's definitions leave the op whole (``retrace.torch_decomposition``):
    ``aten.elu`` with an ``input_scale``, which torchlib lowers as ``Elu(input_scale * x)`` and so scales the positive
    side too, is a core ATen op no other route re-lowers."""
    fx = getattr(loc, "fx", None)
    wrong = fx.wrong if fx is not None else None
    # only an FX node wrong on its own: a torch op the alignment by value names (a TorchScript file) may be
    # right within float32's rounding of an ill-conditioned sum, which another summation route matches by chance
    named_ops = (wrong.aten, wrong.target) if wrong is not None else ()
    ops = tuple(t for t in dict.fromkeys(named_ops) if t and torch_decomposition(t) is not None)
    if not variant.retrace or not ops:
        return variant
    try:
        ops = relowerable(module, tuple(ins), ops)      # reaching no prims, which no exporter lowers
    except Exception:  # noqa: BLE001 - a module make_fx cannot trace: the re-trace says so itself
        return variant
    return variant._replace(relower=ops)


def _relowered_spec(variant: Variant) -> dict:
    return {"relower": list(variant.relower)} if variant.relower else {}


def _relowered_or(ctx: Any, case: Case, variant: Variant) -> Any:
    """The ops a decomposition or a re-trace re-lowered: the ones named wrong, else the ones torch's table has."""
    return variant.relower or decomposed_targets(ctx, case, variant)


def _story(ctx: Any, case: Case, module: Any, model: Any, feeds: dict, ev: Eval, variant: Variant,
           loc: Any, rewrite: Rewrite) -> tuple[str, str, Any, Any]:
    """(class, story, the node named, the FX node named wrong) of a re-export: from the node the FX values
    name wrong (a dynamo file), else the one node the re-export computes otherwise; for the export
    without the ONNX optimizer or peephole pass, what the pass changed in the origin (``rewrite``:
    pass_rewrite.py; the node named is the first the pass made, a fused node), for another export that
    computes what torch computes, the ops where it and the file part (optimizer_diff.py)."""
    why, change = variant.why.replace(" on the runtime input shapes", ""), rewrite.said
    fx = getattr(loc, "fx", None)
    wrong = fx.wrong if fx is not None and getattr(loc, "kind", "") != "runtime" else None
    if wrong is not None:       # a dynamo file: its FX values named the wrong node (fx_localise)
        node = next(n for n in case.model.graph.node if n.name == wrong.nodes[-1])
        check, said = fx_story(case, module, fx, ctx, variant, change)
    else:
        made = [n for n in case.model.graph.node if n.op_type in rewrite.made]
        node = made[0] if made else mistranslated(case, model, feeds) if _computes(ev) else None
        check, said = story(case, module, node, ctx, variant, change)
    named = list(wrong.op_types) if wrong is not None else [node.op_type] if node is not None else []
    named = [] if wrong is not None and wrong.folded else named     # its readers' ops are not what is wrong
    differs = (export_change(case.model, model, why, named)
               if variant.optimize and variant.peephole and _computes(ev) else "")
    if variant.opset is not None and variant.opset == (ctx.index.opset or 0) + 1 and _computes(ev):   # a pinned opset
        said = pinned_story(case.model, model, ctx.index.opset, variant.opset, variant.exporter) or said
    return check, (f"{said[:-2]} ({differs}); " if differs and said.endswith("; ") else said), node, wrong


def _feeds(model: Any, ins: list[Any]) -> dict[str, np.ndarray]:
    """The graph inputs of a re-export (its initializers aside) fed the captured call inputs."""
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    return {n: t.detach().cpu().numpy() for n, t in zip(names, ins)}


def _export(module: Any, ins: list[Any], variant: Variant, dims: Optional[list[list[int]]] = None) -> Any:
    """``module`` exported alone on ``ins`` the way ``variant`` says (an onnx.ModelProto)."""
    import onnx

    with tempfile.TemporaryDirectory(prefix="drifttui-reexport-") as d:
        path = export_model(module, tuple(ins), {}, variant.exporter, Path(d), "origin.onnx", opset=variant.opset,
                            decompose=variant.decompose, retrace=variant.retrace, optimize=variant.optimize,
                            script=variant.script, dims=dims if variant.script or variant.why == TRACED else None,
                            peephole=variant.peephole, relower=variant.relower)
        return onnx.load(str(path))


def _changed(ctx: Any, sized: Any, own: Optional[Told]) -> dict:
    """What the verified re-export changed besides the exporter: the sizes made static (a lowering on a dynamic size),
    the mode (a file exported in training mode, by the file's exporter)."""
    if sized is not None:
        return {"static": True}
    return {"eval": True, "made_by": run_exporter(ctx.index, ctx.cfg)} if trained(own) else {}


def _traced(ctx: Any) -> Variant:
    """The file's own exporter, as a re-export: the trace the file is (frozen_trace's probe)."""
    made_by = run_exporter(ctx.index, ctx.cfg)
    return Variant(made_by if made_by in ("dynamo", "torchscript") else "torchscript", TRACED)


def _computes(ev: Eval) -> bool:
    return ev.ok and not ev.fails


def _defined(ctx: Any, case: Case, variant: Variant, wrong: Any) -> Optional[Told]:
    """A re-trace's story when it went through drifttui's own definition of the op (definitions.py): the
    op the FX values name, else the first op of the module's program that drifttui defines (the node
    over the tolerance may be a Log after an erfc that cancelled to 0)."""
    if not variant.retrace:
        return None
    made_by = run_exporter(ctx.index, ctx.cfg)
    named = [wrong.target] if wrong is not None and fits(ctx, case, wrong.target) else []    # the call fits the story
    return told(named + decomposed_targets(ctx, case, variant), made_by)


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
    # the inputs the graft baked in (the same in every sample) are not among its model's inputs
    return _run(patch.graft.model, [t for k, t in enumerate(io[0]) if k not in patch.graft.baked], io[1], case)
