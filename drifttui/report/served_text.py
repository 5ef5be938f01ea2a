"""The served model's lines (Triton: docs/triton.md) and the batch sweep's, as plain text; each
medium escapes them (text.py, markdown.py, junit.py): model names, paths and URLs are untrusted."""
from __future__ import annotations

from drifttui.core.result import Result
from drifttui.report.summary import fmt


def served_lines(result: Result) -> list[str]:
    s = result.served
    out: list[str] = []
    if s is not None:
        where = s.url if s.source == "server" else s.repo
        head = f"served: {s.model}" + (f" version {s.version}" if s.version is not None else "") + f" ({s.source} {where})"
        if s.verdict:
            head += f" — {'served = file' if s.verdict == 'same' else 'served differs from the file: ' + s.reason}"
        out.append(head)
        if s.file:
            out.append(f"  file: {s.file}" + (f" ({s.why_file})" if s.why_file else ""))
        out += [f"  config: {f}" for f in s.fields_shown()]
        if s.unreproducible:
            out.append("  not reproduced here (the served numbers may differ): " + "; ".join(s.unreproducible))
        if s.detail:
            out.append(f"  {s.detail}")
        for o in s.outputs:
            top = ""
            if o.top1_vs_torch is not None:
                top = f", top-1 vs torch {100 * o.top1_vs_torch:.2f}%"
                if o.batched_top1_vs_torch is not None:
                    top += f", batched by the server {100 * o.batched_top1_vs_torch:.2f}%"
                if o.local_top1_vs_torch is not None:
                    top += f" (local file {100 * o.local_top1_vs_torch:.2f}%)"
            out.append(f"  output {o.name}: served vs local max |d| {fmt(o.max_abs_vs_local)}, vs torch "
                       f"{fmt(o.max_abs_vs_torch)}{top}")
        for r in s.runs:
            per = 1000 * r.seconds / r.requests if r.requests else 0.0
            out.append(f"  {r.mode}: {r.requests} requests in {r.seconds:.2f} s ({per:.1f} ms each), "
                       f"max |d| vs local {fmt(r.max_abs_vs_local)}")
    out += sweep_lines(result)
    return out


def sweep_lines(result: Result) -> list[str]:
    b = result.batch_sweep
    if b is None:
        return []
    if b.note:
        return [f"batch sweep {b.sizes}: {b.note}"]
    sizes = ", ".join(f"{k}: {fmt(d)}" for k, d in zip(b.sizes, b.outputs_max_abs))
    if b.invariant:
        return [f"batch sweep {b.sizes}: batch invariant (outputs max |alone - batched| {sizes})"]
    head = f"batch sweep {b.sizes}: the outputs depend on the batch (max |alone - batched| {sizes})"
    if b.first_layer is not None:
        lay = next((L for L in b.layers if L.layer == b.first_layer), None)
        figs = ", ".join(f"{k}: {fmt(d)}" for k, d in zip(b.sizes, lay.max_abs)) if lay else ""
        cls = f" {lay.cls}" if lay and lay.cls else ""
        head += f"; first layer that depends on it: #{b.first_layer} {b.first_module or '(root)'}{cls} ({figs})"
    return [head]
