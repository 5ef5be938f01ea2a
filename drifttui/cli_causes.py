"""`drifttui repro` and `drifttui repair`: the verified causes on the command line (issue 8)."""
from __future__ import annotations

import argparse
import os
from typing import Any, Callable, Optional

from drifttui.cli_common import EXIT_CODES_HELP, _add_run_options, _progress_printer, config_from_args, input_files
from drifttui.core.progress import Progress
from drifttui.core.result import display_name
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


def _explained(config: Any) -> tuple[Any, Any, Any, Any]:
    """Run, then the findings verified at the origin: (engine, run, result, explanation)."""
    from drifttui.core.pipeline import Pipeline

    engine = Pipeline()
    progress = _progress_printer()
    run = engine.run(config, progress=progress)
    explained = engine.explain(run.result, progress=progress)
    return engine, run, explained.result, explained.explanation


def cmd_repro(args: argparse.Namespace) -> int:
    from drifttui.core.explain.causes.repro import check_dir, summary, write_case

    config = config_from_args(args)
    check_dir(args.out, input_files(config))
    _, _, result, exp = _explained(config)
    if result.drift_origin is None:
        _say(f"nothing to reproduce: no drift origin (verdict {result.verdict}); no folder written")
        return EXIT_OK if result.verdict == "ok" else EXIT_DRIFT
    if exp.case is None:
        _say(f"cannot reproduce {result.drift_origin.module or '(root)'}: {exp.no_case}; no folder written")
        return EXIT_CANNOT
    ev = write_case(exp.case, args.out, exp.loc.note if exp.loc else "")
    s = summary(exp.case, ev, args.out)
    say = _sayer()
    say(f"wrote {args.out.rstrip('/') or args.out}: {s['nodes']} ONNX node(s) of {display_name(s['module'])}, with the PyTorch-side "
        f"inputs and outputs of sample {s['sample']}")
    say(f"ONNX Runtime on those nodes alone differs from the torch outputs by {s['max_abs']:.4g}: "
        + ("the drift reproduces" if s["reproduces"] else "within the tolerance (the drift does NOT reproduce alone)"))
    folder = args.out.rstrip("/\\") or args.out
    say(f"run it: the script in {os.path.join(folder, 'README.md')} (onnxruntime alone), or "
        f"`onnx_test_runner {folder}`")
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
        return f"the {p.get('exporter')} re-export of {p.get('module') or '(root)'} grafted in (opset {p.get('opset')})"
    if p["op"] == "rewrite":
        form = f" ({p['form']})" if p.get("form") else ""
        return f"rewrite {p.get('rewrite')}{form} at {p.get('node')}"
    what = f"{p['op']} {p.get('node') or p.get('name')}"
    return what + (f" {p['name']}={p['value']}" if p["op"] == "set_attribute" else "")


def cmd_repair(args: argparse.Namespace) -> int:
    from drifttui.core.explain.causes.repair import repair
    from drifttui.report.outputs import check_output, write_atomic_bytes

    config = config_from_args(args)
    check_output(args.out, "--out", input_files(config))
    from drifttui.core.pipeline import Pipeline

    engine = Pipeline()
    progress = _progress_printer()
    run = engine.run(config, progress=progress)
    kept = _repair_keep_list(args, config, engine, run, progress)
    if kept is not None:
        return kept
    explained = engine.explain(run.result, progress=progress)
    result, exp = explained.result, explained.explanation
    if result.drift_origin is None:
        _say(f"nothing to repair: no drift origin (verdict {result.verdict}); no file written")
        return EXIT_OK if result.verdict == "ok" else EXIT_DRIFT
    from drifttui.core.prepare.graph import full_model

    fixed = repair(full_model(run.prepared.index), exp)     # written whole: the weights in the file
    if fixed.model is None:
        head = exp.findings[0] if exp.findings else None
        extra = f"; the fix: {head.fix}" if head is not None and head.fix else ""
        why = next((p["why"] for p in fixed.not_applicable if p.get("why")), "")
        what = (f"a verified re-export that cannot be grafted ({why})" if why else "a verified re-export"
                if fixed.not_applicable else "no verified ONNX-level patch")
        if exp.case is None:
            what = f"no test case of the origin ({exp.no_case})"
        _say(f"cannot repair the file: {what} for {display_name(result.drift_origin.module)}{extra}; no file written")
        return EXIT_CANNOT
    progress(Progress("repair", message=f"applying {len(fixed.applied)} patch(es) to a copy; checking it again"))
    after = engine.recheck(config, fixed.model, progress=progress.phase("repaired copy: "))
    write_atomic_bytes(args.out, fixed.model.SerializeToString(), "--out")
    b_abs, b_top = _out_metrics(result)
    a_abs, a_top = _out_metrics(after)
    fmt = lambda v: "-" if v is None else f"{v:.4g}"  # noqa: E731
    _say(f"applied {len(fixed.applied)} patch(es): " + "; ".join(_describe(p) for p in fixed.applied))
    _say(f"{'':24}{'before':>12}{'after':>12}")
    _say(f"{'origin local max |d|':24}{fmt(fixed.local_before):>12}{fmt(fixed.local_after):>12}")
    _say(f"{'output max |d|':24}{fmt(b_abs):>12}{fmt(a_abs):>12}")
    _say(f"{'top-1 agreement':24}{fmt(b_top):>12}{fmt(a_top):>12}")
    _say(f"check on the repaired copy: {after.verdict}; wrote {args.out}")
    _say_source_fix(fixed.applied, exp.findings, result.environment)
    return EXIT_DRIFT if after.verdict == "drift" else EXIT_OK


def _say_source_fix(applied: list[dict[str, Any]], findings: list[Any], env: Any) -> None:
    """The change to make at the source, so that the next export does not bring the drift back."""
    from drifttui.core.explain.causes.source_fix import source_fixes

    fixes = source_fixes(applied, findings, env.opset, env.exporter)
    if not fixes:
        return
    _say("fix the source too (a re-export of the unchanged setup writes the drift again):")
    for code, words in fixes:
        _say(f"  {code}" + (f"  # {words}" if words and code else words))


def _repair_keep_list(args: argparse.Namespace, config: Any, engine: Any, run: Any, progress: Any) -> Optional[int]:
    """An over-budget reduced-precision file: the verified keep-in-float32 list (explain/causes/keep_list.py),
    applied to a copy, checked again and printed in the converters' forms; None: not that case."""
    from drifttui.core.capture.shares import torch_tensors
    from drifttui.core.explain.causes.keep_list import search
    from drifttui.core.prepare.keep_float32 import without_views
    from drifttui.report.outputs import write_atomic_bytes

    result = run.result
    if result.precision is None or result.precision.verdict != "over budget":
        return None
    progress(Progress("repair", message=f"over the {result.precision.format} budget: looking for the smallest "
                                        "keep-in-float32 list (whole-model checks of copies)"))
    checks = [0]

    def recheck(model: Any) -> Any:
        checks[0] += 1
        return engine.recheck(config, model, progress=progress.phase(f"check {checks[0]} of a copy: "))

    found = search(run.prepared, result, recheck, torch_tensors(run.prepared.model))
    if found.genuine:
        print(f"over the {result.precision.format} precision budget at {', '.join(found.genuine)}, but keeping "
              "it in float32 does not remove the error (share of the output error ~0): a genuine drift, not "
              "the precision; looking for its verified patches")
        return None
    if not found.verified or found.model is None:
        print(f"no keep-in-float32 list brings the file within its {result.precision.format} budget "
              f"({found.checks} whole-model checks, up to {len(found.layers)} layer(s) kept); no file written")
        return EXIT_DRIFT
    write_atomic_bytes(args.out, without_views(found.model).SerializeToString(), "--out")
    b_abs, b_top = _out_metrics(result)
    a_abs, a_top = _out_metrics(found.after)
    fmt = lambda v: "-" if v is None else f"{v:.4g}"  # noqa: E731
    print(f"over the {result.precision.format} precision budget; keeping {len(found.layers)} layer(s) in float32 "
          f"brings it within (verified: the copy checked end to end, {found.checks} check(s)): "
          + ", ".join(found.layers))
    print(f"keep in float32 (nodes of your float model): {', '.join(found.nodes)}")
    print(f"{'':24}{'before':>12}{'after':>12}")
    print(f"{'output max |d|':24}{fmt(b_abs):>12}{fmt(a_abs):>12}")
    print(f"{'top-1 agreement':24}{fmt(b_top):>12}{fmt(a_top):>12}")
    print(f"check on the patched copy: {found.after.precision.verdict if found.after.precision else found.after.verdict}"
          f"; wrote {args.out}")
    print("fix the source too: convert again with these layers kept in float32")
    for tool, arg in found.forms.items():
        print(f"  {tool}: {arg}")
    return EXIT_OK
