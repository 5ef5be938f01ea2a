"""`drifttui repro` and `drifttui repair`: the verified causes on the command line (issue 8)."""
from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from drifttui.cli_common import EXIT_CODES_HELP, _add_run_options, _progress_printer, config_from_args, input_files
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
    """One line on stdout: the names in it (module, node, path) escaped for the terminal."""
    from drifttui.report.escape import terminal

    print(terminal(text))


def _explained(config: Any) -> tuple[Any, Any, Any, Any]:
    """Run, then the findings verified at the origin: (engine, run, result, explanation)."""
    from drifttui.core.pipeline import Pipeline

    engine = Pipeline()
    run = engine.run(config, progress=_progress_printer(sys.stderr.isatty()))
    explained = engine.explain(run.result)
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
    _say(f"wrote {args.out}: {s['nodes']} node(s) of {s['module'] or '(root)'}, PyTorch-side inputs and outputs "
          f"of sample {s['sample']}")
    _say(f"onnxruntime on model.onnx differs from the torch outputs by {s['max_abs']:.4g}: "
          + ("the drift reproduces" if s["reproduces"] else "within the tolerance (the drift does NOT reproduce alone)"))
    _say(f"run it: cd {args.out} && see README.md (onnxruntime alone)")
    return EXIT_DRIFT if s["reproduces"] else EXIT_OK


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
    engine, run, result, exp = _explained(config)
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
        _say(f"cannot repair the file: {what} for {result.drift_origin.module}{extra}; no file written")
        return EXIT_CANNOT
    after = engine.recheck(config, fixed.model)
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
    return EXIT_DRIFT if after.verdict == "drift" else EXIT_OK
