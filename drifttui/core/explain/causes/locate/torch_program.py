"""The origin module's torch program, as the dynamo exporter sees it: ``torch.export`` on the module's
captured inputs, decomposed as the exporter decomposes it (one per module, ``ctx.cache``), and what
the stories and guards read from it: the ATen targets it calls (and the ops they were decomposed
from), and the arguments of each call.  ``fx_localise`` runs this program to give the file's values
torch's; ``reexport_story`` and ``assemble`` read its calls."""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.case import Case, call_io
from drifttui.core.model.export import quiet


def target_name(t: str) -> str:
    """An FX target without its ``torch.ops.`` prefix (``aten.add.Tensor``)."""
    return t[len("torch.ops."):] if t.startswith("torch.ops.") else t


def addends(program: list[tuple]) -> list[float]:
    """The numbers torch's graph adds to a value, of ``fx_localise``'s program rows (name, target, value, call,
    ATen op, args): ``aten.add(x, c)`` gives c, ``aten.sub(x, c)`` -c."""
    sign = {"aten.add.Tensor": 1.0, "aten.add.Scalar": 1.0, "aten.sub.Tensor": -1.0, "aten.sub.Scalar": -1.0}
    return [sign[row[1]] * float(row[5][1]) for row in program if row[1] in sign and len(row[5]) == 2
            and isinstance(row[5][1], (int, float)) and not isinstance(row[5][1], bool)]


def program(ctx: Any, module_name: str, module: Any, ins: list[Any]) -> Any:
    """``module`` exported and decomposed as the dynamo exporter does it (the FX graph it translated);
    one per module (ctx.cache)."""
    import torch
    from torch.onnx._internal.exporter import _core, _registration

    key = f"causes:fx:program:{module_name}"
    if key not in ctx.cache:
        ctx.cache[key] = None           # a module torch.export cannot trace is not tried again
        with quiet():
            # the capture's inference tensors: a module with parameters cannot be traced on them
            plain = tuple(t.clone() if isinstance(t, torch.Tensor) and t.is_inference() else t for t in ins)
            ep = torch.export.export(module, plain, strict=False)
            ctx.cache[f"causes:fx:called:{module_name}"] = [
                (target_name(str(n.target)), tuple(n.args), dict(n.kwargs)) for n in ep.graph.nodes
                if n.op == "call_function"]     # as the module called them, before any decomposition
            ep = _core._prepare_exported_program_for_export(ep, registry=_registration.ONNXRegistry.from_torchlib())
        ctx.cache[key] = ep.module()
    if ctx.cache[key] is None:
        raise RuntimeError("the origin module could not be exported with torch.export")
    return ctx.cache[key]


def _origin_program(ctx: Any, case: Case) -> Any:
    """The origin module's FX program on its captured inputs, or None when torch.export cannot trace it."""
    module = ctx.modules().get(case.module) if case.module else ctx.model
    io = call_io(ctx, case)
    if module is None or io is None:
        return None
    try:
        return program(ctx, case.module, as_called(ctx, case.call, module, ctx.sample(case.sample)), io[0])
    except Exception:  # noqa: BLE001 - no FX witness
        return None


def torch_calls(ctx: Any, case: Case, prefix: str) -> list[list[Optional[float]]]:
    """The numeric arguments of the origin module's FX calls whose target starts with ``prefix``
    (e.g. ``aten.softplus``: x, beta, threshold), in call order: the torch side of a functional
    call for a file without FX metadata (a TorchScript file); [] when torch.export cannot trace it."""
    gm = _origin_program(ctx, case)
    return [] if gm is None else numeric_calls(gm, prefix)


def numeric_calls(gm: Any, prefix: str) -> list[list[Optional[float]]]:
    """Each call of ``gm`` whose target starts with ``prefix``: its positional arguments, a number or None."""
    return [[float(a) if isinstance(a, (int, float)) and not isinstance(a, bool) else None for a in n.args]
            for n in gm.graph.nodes if n.op == "call_function" and target_name(str(n.target)).startswith(prefix)]


def program_targets(ctx: Any, case: Case) -> list[str]:
    """The ATen targets the origin module's torch program calls (as the dynamo exporter sees them),
    in call order without repeats; [] when torch.export cannot trace it."""
    gm = _origin_program(ctx, case)
    if gm is None:
        return []
    return list(dict.fromkeys(target_name(str(n.target)) for n in gm.graph.nodes if n.op == "call_function"))


def called_targets(ctx: Any, case: Case) -> list[str]:
    """``program_targets`` with, after each decomposed node's target, the torch op it was decomposed from
    (its ``original_aten``: ``aten.std.correction`` after ``prims.var.default``): the ops the module called."""
    gm = _origin_program(ctx, case)
    if gm is None:
        return []
    out: list[str] = []
    for n in gm.graph.nodes:
        if n.op == "call_function":
            orig = n.meta.get("original_aten")
            out += [target_name(str(n.target))] + ([target_name(str(orig))] if orig is not None else [])
    return list(dict.fromkeys(out))


def undecomposed_calls(ctx: Any, case: Case) -> list[tuple[str, tuple, dict]]:
    """(ATen target, args, kwargs) of each call of the origin module's torch program as the module called them,
    before the exporter's decompositions (``aten.pairwise_distance`` with its ``eps``); [] when torch.export
    cannot trace it."""
    return [] if _origin_program(ctx, case) is None else ctx.cache.get(f"causes:fx:called:{case.module}", [])


def call_args(ctx: Any, case: Case, target: str) -> list[tuple[tuple, dict]]:
    """(args, kwargs) of each call of ``target`` in the origin module's torch program (a story's guard)."""
    gm = _origin_program(ctx, case)
    return [] if gm is None else [(tuple(n.args), dict(n.kwargs)) for n in gm.graph.nodes
                                  if n.op == "call_function" and target_name(str(n.target)) == target]
