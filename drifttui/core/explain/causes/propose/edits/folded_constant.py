"""Torch's value written into a constant the dynamo exporter's optimizer folded with another element count, or with
other numbers (``torch.hamming_window(n)`` folded from ONNX ``HammingWindow``: 25/46, not 0.54)
(``locate/folded_values.py`` names it: ``torch.arange(0, 3, 0.01)`` folded from a float32 ``Range`` into 301 elements
where torch has 300).  The constant depends on no input, so torch's value of its FX node is right for every input:
the patch replaces the constant with it (``{"op": "replace_constant", "name": C, "source": ...}``, the values in the
payload; several such constants, a ``sequence`` of them with their values) and is verified like any other; its class
is the lowering of the FX node it was folded from."""
from __future__ import annotations

from typing import Any

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.fx_words import describe
from drifttui.core.onnx.edit.patches import Patch


def folded_patches(case: Case, loc: Any, last: bool = False) -> list[Patch]:
    """Torch's value in the folded constant.  A value computed from parameters or buffers only as a ``last`` resort:
    whether the exporter's optimizer folded it otherwise (a float16 weight's norm summed in float16 by ONNX's
    reference) or its lowering computes otherwise (an antialiased resize folded with sizes, not torch's scale), the
    re-exports tell first (without the optimizer, the file's nodes compute the former right)."""
    fx = getattr(loc, "fx", None)
    w = fx.wrong if fx is not None and getattr(loc, "kind", "") != "runtime" else None
    if w is None or not w.folded or w.held is None or w.from_parameters != last:
        return []
    const, value = w.held
    count = "elements where torch's value has" in w.folded
    fix = (f"the exporter's optimizer folded torch's {w.target} into the constant {const} with "
           f"{'another element count' if count else 'other numbers than torch computes'}: `drifttui repair` writes "
           "torch's value into it; in the source, "
           + ("make the value from a whole-number count (torch computes a count from float bounds in double, the "
              "exported file need not)" if count else "make the value once with torch and keep it as a buffer")
           # a last resort comes after the re-exports: TorchScript's did not compute torch's value (or refused)
           + ("" if last else ", or export with the TorchScript exporter, which folds it with torch's own kernel"))
    why = f"{describe(fx, case.module)}: the exporter's lowering of torch's {w.target} is wrong"
    spec = {"op": "replace_constant", "name": const, "source": f"torch's value of FX node {w.name}"}
    more, names = [], {const}
    for g in [g for g in fx.groups if g.folded and g.held is not None and g is not w]:
        if g.held[0] not in names:          # two FX nodes folded into one constant (two STFTs' one window)
            more.append(g)
            names.add(g.held[0])
    if more:            # every folded constant of another count at once (the range and its ``1 - range``)
        spec = {"op": "sequence", "patches": [{"op": "replace_constant", "name": g.held[0], "value": g.held[1].tolist()}
                                              for g in [w, *more]]}
        value = None
    nodes = {n for g in fx.groups if g.folded and g.held is not None for n in g.nodes} | set(w.nodes)
    return [Patch(spec, "lowering", why, fix, "export", payload=value, module=case.module,
                  nodes=sorted(nodes), torch_op=(w.call, w.aten) if w.call else None)]
