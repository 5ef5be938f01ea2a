"""`drifttui repro` and `drifttui repair`: the verified causes on the command line (issue 8)."""
from __future__ import annotations

import argparse
import os
from typing import Any, Callable, Optional

from drifttui.cli_common import (EXIT_CODES_HELP, _add_run_options, _progress_printer, config_from_args, input_files,
                                 no_served_options)
from drifttui.core.result import UNATTRIBUTED, display_name
from drifttui.errors import EXIT_CANNOT, EXIT_DRIFT, EXIT_OK


def _add_cause_commands(sub: Any) -> None:
    repro = sub.add_parser("repro", help="write the drift origin's nodes as an ONNX test case (torch-side outputs)",
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES_HELP)
    _add_run_options(repro)
    repro.add_argument("--out", metavar="DIR", required=True,
                       help="new folder: model.onnx, test_data_set_0/input_*.pb and output_*.pb, README.md")
    repair = sub.add_parser("repair", help="apply the verified ONNX-level patches to a copy and check it again",
                            formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES_HELP)
    _add_run_options(repair)
    repair.add_argument("--out", metavar="FIXED.onnx", required=True, help="where to write the repaired copy")


def _say(text: str) -> None:
    """One line on stdout (see ``_sayer``)."""
    _sayer()(text)


def _engine_run(config: Any) -> tuple[Any, Any, Any]:
    """A Pipeline, its run of ``config`` and the progress printer (stderr: live in a terminal, a line
    per stage in a log) the next stages go on with."""
    from drifttui.core.pipeline import Pipeline

    engine, progress = Pipeline(), _progress_printer()
    return engine, engine.run(config, progress=progress), progress


def cmd_repro(args: argparse.Namespace) -> int:
    from drifttui.report.outputs import check_dir

    config = config_from_args(args)
    no_served_options(config, args.command)
    check_dir(args.out, input_files(config))
    engine, run, progress = _engine_run(config)
    rep = engine.repro(run.result, progress=progress)
    result = rep.result
    if result.drift_origin is None:
        _say(f"nothing to reproduce: no drift origin (verdict {result.verdict}); no folder written")
        return EXIT_OK if result.verdict == "ok" else EXIT_DRIFT
    if rep.case is None:
        _say(f"cannot reproduce {result.drift_origin.module or '(root)'}: {rep.why}; no folder written")
        return EXIT_CANNOT
    s = rep.write(args.out)
    say = _sayer()
    say(f"wrote {args.out}: {s['nodes']} ONNX node(s) of {display_name(s['module'])}, with the PyTorch-side "
        f"inputs and outputs of sample {s['sample']}")
    say(f"ONNX Runtime on those nodes alone differs from the torch outputs by {s['max_abs']:.4g}: "
        + ("the drift reproduces" if s["reproduces"] else "within the tolerance (the drift does NOT reproduce alone)"))
    readme = os.path.join(args.out, "README.md")      # `--out case/` gave case//README.md
    say(f"run it: the script in {readme} (onnxruntime alone), or `onnx_test_runner {args.out}`")
    return EXIT_DRIFT if s["reproduces"] else EXIT_OK


def _sayer() -> Callable[[str], None]:
    """Lines to stdout through the report console: words wrap at a terminal's width (never
    mid-word), nothing wraps when piped, and names are never read as markup."""
    from drifttui.report.console import report_console
    from drifttui.report.escape import plain

    console = report_console()
    return lambda line: console.print(plain(line))      # names escaped for the terminal


def _out_metrics(result: Any) -> tuple[float, Optional[float]]:
    worst = max((o.metrics.max_abs.worst for o in result.outputs), default=0.0)
    top1 = [o.top1_agreement for o in result.outputs if o.top1_agreement is not None]
    return worst, (min(top1) if top1 else None)


def _describe(p: dict[str, Any]) -> str:
    """One applied patch, in words (its spec is in the JSON report)."""
    if p["op"] == "reexport":
        cut = f" from the file's value {p['cut_at']} on" if p.get("cut_at") else ""
        return (f"the {p.get('exporter')} re-export of {p.get('module') or '(root)'} grafted in{cut} "
                f"(opset {p.get('opset')})")
    if p["op"] == "rewrite":
        form = f" ({p['form']})" if p.get("form") else ""
        return f"rewrite {p.get('rewrite')}{form} at {p.get('node')}"
    if p["op"] == "restore_weight":
        return f"{p['name']} of {p.get('module') or '(root)'} restored from {p.get('from')} ({p.get('how')})"
    if p["op"] == "restore_constant":
        value = p.get("value")
        shown = value[0] if isinstance(value, list) and len(value) == 1 else value
        return f"constant {p['name']} of node {p.get('node')} ({p.get('module') or '(root)'}) set back to {shown}"
    if p["op"] == "restore_attribute":
        return f"{p['name']} of node {p.get('node')} ({p.get('module') or '(root)'}) set back to {p.get('value')}"
    if p["op"] == "sequence":
        return " then ".join(_describe(q) for q in p.get("patches", []))
    if p["op"] == "replace_constant" and isinstance(p.get("value"), (int, float)):
        return f"constant {p['name']} of node {p.get('node') or p['name']} set to {p['value']!r}"
    what = f"{p['op']} {p.get('node') or p.get('name')}"
    return what + (f" {p['name']}={p['value']}" if p["op"] == "set_attribute" else "")


def cmd_repair(args: argparse.Namespace) -> int:
    from drifttui.core.explain import genuine_line
    from drifttui.report.outputs import check_output, write_model

    config = config_from_args(args)
    no_served_options(config, args.command)
    check_output(args.out, "--out", input_files(config))
    engine, run, progress = _engine_run(config)
    done = engine.repair(run.result, progress=progress)
    say = _sayer()
    keep = done.keep
    if keep is not None and keep.genuine:
        say(f"{genuine_line(run.result, keep.genuine)}; looking for its verified patches")
    result = done.result
    if done.kind == "nothing":
        say(f"nothing to repair: no drift origin (verdict {result.verdict}); no file written")
        return EXIT_OK if result.verdict == "ok" else EXIT_DRIFT
    if done.kind == "none" and keep is not None and not keep.genuine:
        say(f"{done.reason} ({keep.checks} whole-model checks, up to {len(keep.layers)} layer(s) kept); "
            "no file written" + (f"; {done.fix}" if done.fix else ""))
        return EXIT_DRIFT
    if done.kind == "none":
        extra = f"; the fix: {done.fix}" if done.fix else ""
        say(f"cannot repair the file: {done.reason} for {display_name(result.drift_origin.module)}{extra}; "
            "no file written")
        return EXIT_CANNOT
    write_model(args.out, done.model, "--out")
    if done.kind == "keep_list":
        _say_keep_list(say, result, done, args.out)
        return EXIT_OK
    if done.kind == "reduce_range":
        _say_reduce_range(say, result, done, args.out)
        return EXIT_OK
    fixed, after = done.patches, done.after
    say(f"applied {len(fixed.applied)} patch(es): " + "; ".join(_describe(p) for p in fixed.applied))
    _say_table(say, [("origin local max |d|", fixed.local_before, fixed.local_after)], result, after)
    say(f"check on the repaired copy: {after.verdict}{_still(after)}; wrote {args.out}")
    if done.source_fixes:
        # an edited constant or weight need not come from the export: then no re-export claim
        edited = all(getattr(p, "check", "") == "versions" for p in fixed.applied)    # not the export's drift
        say("fix the source too (the step that changed the file after its export changes it again):" if edited else
            "fix the source too (a re-export of the unchanged setup writes the drift again):"
            if any(code for code, _ in done.source_fixes) else "fix the source too, where the file came from it:")
        for code, words in done.source_fixes:
            say(f"  {code}" + (f"  # {words}" if words and code else words))
    return EXIT_DRIFT if after.verdict == "drift" else EXIT_OK


def _still(after: Any) -> str:
    """What is left of the repaired copy's drift: a second origin to repair, or layers no module owns (each
    module's own nodes agree on torch's inputs: upstream rounding the model amplifies, which no patch of the file
    removes; the fuzzer's remainder(-1e4, x) after 16 Linear layers, its repaired copy's own error 0)."""
    if after.verdict != "drift":
        return ""
    if after.drift_origin is not None:
        return f" at {display_name(after.drift_origin.module)} (repair the copy again for it)"
    if any(layer.status == UNATTRIBUTED for layer in after.layers):
        return (" with no module owning what is left (each module's own nodes agree with torch on torch's inputs: "
                "last-bit rounding that holds each module's tolerance, amplified past it by what follows, which no "
                "patch of this file removes; `drifttui check` says why)")
    return ""


def _say_table(say: Callable[[str], None], rows: list, before: Any, after: Any) -> None:
    """The before/after table: ``rows`` first, then the outputs' max |d| and top-1 agreement."""
    b_abs, b_top = _out_metrics(before)
    a_abs, a_top = _out_metrics(after)
    fmt = lambda v: "-" if v is None else f"{v:.4g}"  # noqa: E731
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731   # as `check` says it
    say(f"{'':24}{'before':>12}{'after':>12}")
    for label, b, a in rows + [("output max |d|", b_abs, a_abs)]:
        say(f"{label:24}{fmt(b):>12}{fmt(a):>12}")
    say(f"{'top-1 agreement':24}{pct(b_top):>12}{pct(a_top):>12}")


def _say_keep_list(say: Callable[[str], None], result: Any, done: Any, out: str) -> None:
    """A reduced-precision file brought within its budget by layers kept in float32."""
    found = done.keep
    say(f"over the {result.precision.format} precision budget; keeping {len(found.layers)} layer(s) in float32 "
        f"brings it within (verified: the copy checked end to end, {found.checks} check(s)): "
        + ", ".join(found.layers) + found.refused_why())
    say(f"keep in float32 (nodes of your float model): {', '.join(found.nodes)}")
    _say_table(say, [], result, found.after)
    verdict = found.after.precision.verdict if found.after.precision else found.after.verdict
    say(f"check on the patched copy: {verdict}; wrote {out}")
    say("fix the source too: convert again with these layers kept in float32")
    for tool, arg in found.forms.items():
        say(f"  {tool}: {arg}")


def _say_reduce_range(say: Callable[[str], None], result: Any, done: Any, out: str) -> None:
    """An int8 file whose CPU kernel saturates, re-quantized with 7-bit weights (verified end to end)."""
    after = done.after
    say(done.fix)
    say("re-quantized with reduce_range (7-bit weights, as quantize_dynamic / quantize_static(..., "
        "reduce_range=True) make them): verified, the copy checked end to end")
    _say_table(say, [], result, after)
    verdict = after.precision.verdict if after.precision else after.verdict
    say(f"check on the patched copy: {verdict}; wrote {out}; to redo it yourself, quantize again with "
        "reduce_range=True")
