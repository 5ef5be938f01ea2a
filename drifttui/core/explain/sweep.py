"""Rerun the graph at every ONNX Runtime optimisation level (shared by step 3 and the fusion check).

For each level: the final outputs against PyTorch (plain graph, so fusions are not blocked by
extra outputs), the origin's error (graph with the origin's value marked as an output, which
can block the fusion that touches it), and the op types ORT produced, read back from the
optimised model file written through ``SessionOptions.optimized_model_filepath``.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from drifttui.core.runtime.sessions import OPT_LEVELS
from drifttui.core.base.metrics import Stats, compare
from drifttui.core.explain.context import Context


def _ops(proto: Any) -> Counter:
    return Counter(f"{n.domain + '.' if n.domain not in ('', 'ai.onnx') else ''}{n.op_type}" for n in proto.graph.node)


def opt_sweep(ctx: Context) -> dict[str, Any]:
    """Per ORT level: the final outputs, the origin's value and the op types (cached in ctx.cache)."""
    if "opt_sweep" in ctx.cache:
        return ctx.cache["opt_sweep"]
    tol = ctx.result.tolerance
    n = ctx.n_samples(2)
    torch_outs = [ctx.torch_outputs(i) for i in range(n)]
    feeds = [ctx.feeds(ctx.sample(i)) for i in range(n)]
    o = ctx.result.drift_origin
    L = ctx.origin_layer
    value = origin_value = L.onnx_values[0] if L is not None and L.onnx_values else None
    origin_torch: list[Any] = []
    if value is not None and o is not None:
        for i in range(n):
            got = ctx.torch_call_outputs(i, {o.layer}).get(o.layer)
            origin_torch.append(got[0] if got else None)
    if not origin_torch or any(x is None for x in origin_torch):
        value = None            # no torch value to compare the origin's ONNX value with
    base_ops = _ops(ctx.index.model)
    rows: dict[str, dict[str, Any]] = {}
    for k, level in enumerate(OPT_LEVELS):
        ctx.say(f"ORT optimisation level {level}", k, len(OPT_LEVELS))
        rows[level] = _level(ctx, level, feeds, torch_outs, base_ops, tol)
        if value is not None:
            s2 = ctx.ort_session(level, (value,))
            st = Stats()
            for i in range(n):
                st.add(compare(origin_torch[i], s2.run([value], feeds[i])[0], tol.atol, tol.rtol))
            rows[level].update(origin_max_abs=st.max_abs, origin_fails=st.fails())
    base = rows["disable"]
    changed_final = [lv for lv, r in rows.items() if r["final_fails"] != base["final_fails"]]
    fused = sorted({op for r in rows.values() for op in r["new_op_types"]})
    out = {"levels": rows, "samples": n, "final_verdict_changes_at": changed_final,
           "origin_error_changes_at": _origin_changes(rows, tol.atol), "fused_op_types": fused,
           "origin_value": origin_value}
    ctx.cache["opt_sweep"] = out
    return out


def _level(ctx: Context, level: str, feeds: list[Any], torch_outs: list[Any], base_ops: Counter,
           tol: Any) -> dict[str, Any]:
    """The final outputs against torch at one level, and the op types ORT's optimised graph holds."""
    import onnx

    path = ctx.workdir / f"optimized_{level}.onnx"
    sess = ctx.ort_session(level, optimized=path)
    final = Stats()
    for f, t_outs in zip(feeds, torch_outs):
        for t, a in zip(t_outs, sess.run(None, f)):
            final.add(compare(t, a, tol.atol, tol.rtol))
    row: dict[str, Any] = {"final_max_abs": final.max_abs, "final_fails": final.fails()}
    try:
        ops = _ops(onnx.load(str(path), load_external_data=False))
        row.update(nodes=sum(ops.values()), new_op_types=sorted(set(ops) - set(base_ops)),
                   removed_op_types=sorted(set(base_ops) - set(ops)))
    except Exception as exc:  # the optimised file is informative only
        row.update(nodes=None, new_op_types=[], removed_op_types=[], optimized_file_error=f"{type(exc).__name__}")
    return row


def _origin_changes(rows: dict[str, dict[str, Any]], atol: float) -> list[str]:
    """Levels at which the origin's error changes verdict, or changes by more than 10x above atol."""
    base = rows["disable"]
    if "origin_max_abs" not in base:
        return []
    b = base["origin_max_abs"]
    out = []
    for lv, r in rows.items():
        x = r.get("origin_max_abs")
        if x is not None and (r["origin_fails"] != base["origin_fails"]
                              or (max(x, b) > 10 * max(min(x, b), 1e-7) and max(x, b) > atol)):
            out.append(lv)
    return out
