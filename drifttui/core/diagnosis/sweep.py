"""Rerun the graph at every ONNX Runtime optimisation level (shared by step 3 and the fusion check).

For each level: the final outputs against PyTorch (plain graph, so fusions are not blocked by
extra outputs), the origin's error (graph with the origin's value marked as an output, which
can block the fusion that touches it), and the op types ORT produced, read back from the
optimised model file written through ``SessionOptions.optimized_model_filepath``.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from drifttui.core.capture_ort import OPT_LEVELS
from drifttui.core.metrics import Stats, compare
from drifttui.core.diagnosis.context import Context


def _ops(proto: Any) -> Counter:
    return Counter(f"{n.domain + '.' if n.domain not in ('', 'ai.onnx') else ''}{n.op_type}" for n in proto.graph.node)


def opt_sweep(ctx: Context) -> dict[str, Any]:
    # one loop over the four ORT levels with its sessions: kept as moved (issue 9) from steps/
    if "opt_sweep" in ctx.cache:
        return ctx.cache["opt_sweep"]
    import onnx

    tol = ctx.result.tolerance
    n = ctx.n_samples(2)
    torch_outs = [ctx.torch_outputs(i) for i in range(n)]
    feeds = [ctx.feeds(ctx.sample(i)) for i in range(n)]
    o = ctx.result.drift_origin
    L = ctx.origin_layer
    value = L.onnx_values[0] if L is not None and L.onnx_values else None
    origin_torch: list[Any] = []
    if value is not None and o is not None:
        for i in range(n):
            got = ctx.torch_call_outputs(i, {o.layer}).get(o.layer)
            origin_torch.append(got[0] if got else None)
    base_ops = _ops(ctx.index.model)
    rows: dict[str, dict[str, Any]] = {}
    for k, level in enumerate(OPT_LEVELS):
        ctx.say(f"ORT optimisation level {level}", k, len(OPT_LEVELS))
        path = ctx.workdir / f"optimized_{level}.onnx"
        sess = ctx.ort_session(level, optimized=path)
        final = Stats()
        for i in range(n):
            outs = sess.run(None, feeds[i])
            for t, a in zip(torch_outs[i], outs):
                final.add(compare(t, a, tol.atol, tol.rtol))
        row: dict[str, Any] = {"final_max_abs": final.max_abs, "final_fails": final.fails()}
        try:
            opt = onnx.load(str(path), load_external_data=False)
            ops = _ops(opt)
            row["nodes"] = sum(ops.values())
            row["new_op_types"] = sorted(set(ops) - set(base_ops))
            row["removed_op_types"] = sorted(set(base_ops) - set(ops))
        except Exception as exc:  # the optimised file is informative only
            row["nodes"] = None
            row["new_op_types"] = []
            row["removed_op_types"] = []
            row["optimized_file_error"] = f"{type(exc).__name__}"
        if value is not None and origin_torch and all(x is not None for x in origin_torch):
            s2 = ctx.ort_session(level, (value,))
            st = Stats()
            for i in range(n):
                got = s2.run([value], feeds[i])[0]
                st.add(compare(origin_torch[i], got, tol.atol, tol.rtol))
            row["origin_max_abs"] = st.max_abs
            row["origin_fails"] = st.fails()
        rows[level] = row
    base = rows["disable"]
    changed_final = [lv for lv, r in rows.items() if r["final_fails"] != base["final_fails"]]
    origin_changes = []
    if "origin_max_abs" in base:
        b = base["origin_max_abs"]
        for lv, r in rows.items():
            x = r.get("origin_max_abs")
            if x is not None and (r["origin_fails"] != base["origin_fails"]
                                  or (max(x, b) > 10 * max(min(x, b), 1e-7) and max(x, b) > tol.atol)):
                origin_changes.append(lv)
    fused = sorted({op for r in rows.values() for op in r["new_op_types"]})
    out = {"levels": rows, "samples": n, "final_verdict_changes_at": changed_final,
           "origin_error_changes_at": origin_changes, "fused_op_types": fused, "origin_value": value}
    ctx.cache["opt_sweep"] = out
    return out
