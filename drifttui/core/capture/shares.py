"""How much of the model outputs' error each reduced-precision layer causes, measured.

On sample 0: the outputs' squared error E (sum over outputs of sum (onnx - torch)^2) of the file as it
is, and E_c of a copy in which layer c's reduced-precision nodes compute in float32 again
(``keep_float32``: torch's weights where the file holds a rounded copy of them).  The share of c is
(E - E_c) / E: 0.6 means keeping c in float32 removes 60% of the output error (in a QOperator file c
is kept with the layers whose quantized outputs it reads, keep_qoperator.unit: only then does it read
float values).  Shares are measured one
layer at a time, so they need not add up to 1 (layers interact).  At most MAX_LAYERS layers are measured
(the ones with the lowest own SQNR first), one ONNX Runtime session each; tolerance-free.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from drifttui.core.runtime import sessions
from drifttui.core.onnx.edit.keep.float32 import keep_float32, unkept_ops
from drifttui.core.onnx.edit.keep.qoperator import unit
from drifttui.core.prepare.plan.folding import conv_bn_folds, fold_conv_bn

MAX_LAYERS = 24


def torch_tensors(model: Any, calls: Sequence[Any] = ()) -> dict[str, np.ndarray]:
    """The model's parameters and buffers by qualified name (float tensors, as numpy), and for each
    BatchNorm call right after a Conv call (``calls``, in call order) the Conv's weight and bias
    through the fold (``<conv>.weight::folded_<bn>``): an exporter that folds the BatchNorm stores
    those, so a keep-in-float32 copy finds the float values its int8 weight rounds (by content,
    ``qweights.rounded_source``) instead of keeping the rounded ones."""
    out = {}
    for name, t in list(model.state_dict().items()):
        if t.is_floating_point():
            out[name] = t.detach().float().cpu().numpy()
    for prev, call, conv, bn in conv_bn_folds(model, calls):
        w, b = fold_conv_bn(conv, bn)
        out[f"{prev.module}.weight::folded_{call.module}"] = w
        out[f"{prev.module}.bias::folded_{call.module}"] = b
    return out


def output_error(sess: Any, feeds: dict, outputs: list[str], torch_outs: list[Any]) -> float:
    vals = sessions.run(sess, feeds, outputs)
    e = 0.0
    for k, name in enumerate(outputs):
        if k < len(torch_outs) and name in vals:
            t = np.asarray(torch_outs[k], dtype=np.float64)
            o = np.asarray(vals[name], dtype=np.float64).reshape(t.shape) if vals[name].size == t.size else None
            if o is None:
                return math.inf
            e += float(np.sum((o - t) ** 2))
    return e


def measure(pr: Any, cfg: Any, feeds: dict, torch_outs: list[Any], order: list[int],
            notes: Optional[list[str]] = None) -> dict[int, float]:
    """call -> share of the output error, for the calls in ``order`` (most suspect first)."""
    budgets, _ = pr.budgets or ({}, 0.0)
    calls = [c for c in order if budgets.get(c) is not None and budgets[c].node_ids][:MAX_LAYERS]
    if not calls:
        return {}
    outs = pr.index.graph_outputs
    base = sessions.make_session(pr.proto, cfg.opt_level, cfg.deterministic, cfg.provider, pr.workdir, "shares.onnx",
                                 data_dir=pr.index.data_dir, prepack=False)
    e_full = output_error(base, feeds, outs, torch_outs)
    if not e_full or not math.isfinite(e_full):
        return {}
    weights = torch_tensors(pr.model, pr.calls)
    shares: dict[int, float] = {}
    unkept: dict[str, list[str]] = {}      # op -> the layers whose share is not measured for it
    for c in calls:
        ids = {k for u in unit(pr.index, budgets, c) for k in budgets[u].node_ids}
        left = unkept_ops(pr.index, ids)
        if left:      # the patch would leave them quantized: a share of ~0 would read as "a genuine drift"
            for op in left:
                unkept.setdefault(op, []).append(pr.calls[c].module or "(root)")
            continue
        patched = keep_float32(pr.proto, pr.index, ids, weights)
        try:
            sess = sessions.make_session(patched, cfg.opt_level, cfg.deterministic, cfg.provider, pr.workdir,
                                         "share.onnx", data_dir=pr.index.data_dir, prepack=False)
            e_c = output_error(sess, feeds, outs, torch_outs)
        except Exception:      # a patch ORT refuses: that layer's share is not measured
            continue
        shares[c] = (e_full - e_c) / e_full
    if notes is not None and unkept:
        notes.append("the share of the output error was not measured for " + "; ".join(
            f"{', '.join(mods[:4])}{' ...' if len(mods) > 4 else ''} (drifttui cannot compute {op} in float32)"
            for op, mods in sorted(unkept.items())))
    if notes is not None and len(calls) < sum(1 for b in budgets.values() if b.node_ids):
        notes.append(f"the share of the output error was measured for the {len(calls)} reduced-precision layers with "
                     "the lowest own SQNR (sample 0)")
    if notes is not None:
        notes.extend(negative_note(shares, pr.calls))
    return shares


def negative_note(shares: dict[int, float], calls: Sequence[Any]) -> list[str]:
    """What a negative share means, said once when there is one: that layer computed in float32 makes the outputs'
    error larger (its roundings partly cancel other layers'), so no layer owns a fixed part of the error."""
    below = sorted((s, c) for c, s in shares.items() if s < 0)
    if not below:
        return []
    named = ", ".join(f"{calls[c].module or '(root)'} {s:.0%}" for s, c in below[:3])
    more = f" and {len(below) - 3} more" if len(below) > 3 else ""
    return [f"a negative share ({named}{more}): computing that layer in float32 makes the outputs' error larger "
            "(share = 1 - the outputs' squared error with it in float32 / as the file is, sample 0): its roundings "
            "partly cancel other layers' (keeping it in float32 is no fix)"]
