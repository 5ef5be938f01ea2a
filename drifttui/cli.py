"""Command line: thin layer from arguments to the staged pipeline, a report and an exit code."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Iterator, Optional, Sequence

from drifttui.errors import (EXIT_DRIFT, EXIT_INTERRUPTED, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, DriftTuiError,
                             Terminated, failing_dependency, first_line, one_line)

EXIT_CODES_HELP = """exit codes:
  0  no drift at the tolerance (or the gate passes: --fail-on never, a drift the --baseline carries)
  1  drift found (or an error finding with --fail-on error, or top-1 agreement below --min-top1)
  2  bad usage or bad input (one line on stderr names the problem and the fix)
  3  the model or the runtime failed (export error, ONNX Runtime cannot run the graph, NaN outputs)
  129, 130, 143  stopped by SIGHUP, Ctrl-C (SIGINT), SIGTERM: temporary files removed, no report written
"""

TOLERANCE_HELP = """tolerance rule:
  an element passes when |torch - onnx| <= atol + rtol * scale, where scale is the largest |torch|
  value of that layer's output in that sample (relative to the layer's scale). A layer drifts when
  any element fails in any sample. Defaults atol=1e-4, rtol=1e-4 pass float32 noise between
  PyTorch and ONNX Runtime on real models (~1e-6 relative per layer).
"""

MODEL_HELP = ("path/to/file.py:fn or package.module:fn returning an nn.Module, a TorchScript file "
              "(.pt/.ts), or an ExportedProgram (.pt2, only with --trust-model-file)")


def _add_run_options(p: argparse.ArgumentParser, model_optional: bool = False) -> None:
    p.add_argument("model", nargs="?", metavar="MODEL", help=MODEL_HELP)
    p.add_argument("--example", metavar="NAME", help="run a built-in example instead of MODEL (see `drifttui examples`)")
    p.add_argument("--onnx", metavar="FILE", help="the deployed ONNX file (default: export MODEL into a temp dir)")
    p.add_argument("--inputs", metavar="SPEC",
                   help="file.py:fn / pkg.mod:fn returning tensor(s), a .npz/.npy/.pt file, or "
                        "shape:1x3x224x224 (';' between inputs, dtype prefix like int64:1x16)")
    p.add_argument("--samples", type=int, default=100, metavar="N", help="samples to compare (default 100)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="sample i is drawn with seed S+i (default 0)")
    p.add_argument("--atol", type=float, default=None, metavar="A", help="absolute tolerance (default 1e-4)")
    p.add_argument("--rtol", type=float, default=None, metavar="R",
                   help="tolerance relative to the layer's scale (default 1e-4)")
    p.add_argument("--tolerance", type=float, default=None, metavar="T", help="shorthand: atol = rtol = T")
    p.add_argument("--opt-level", choices=["disable", "basic", "extended", "all"], default="disable",
                   help="ONNX Runtime graph optimisation level (default disable: fusions would hide values)")
    p.add_argument("--deterministic", action="store_true",
                   help="deterministic torch algorithms; ORT single-threaded without memory arena")
    p.add_argument("--exporter", choices=["auto", "dynamo", "torchscript"], default="auto",
                   help="exporter used when no --onnx is given (default auto: dynamo, then TorchScript "
                        "if dynamo fails, with a note; a named exporter is used strictly)")
    p.add_argument("--provider", default="CPUExecutionProvider", metavar="NAME",
                   help="ONNX Runtime execution provider (default CPUExecutionProvider)")
    p.add_argument("--max-memory", type=_memory_size, default=None, metavar="SIZE",
                   help="memory budget for one sample's captured intermediates, e.g. 512M or 2G; a model "
                        "over it is compared in windows of consecutive layers (default: no limit)")
    p.add_argument("--batch", type=int, default=1, metavar="N",
                   help="compare N samples per ORT run and torch forward, concatenated along dim 0, when "
                        "the graph's batch dim is dynamic (default 1: one sample at a time)")
    _add_capture_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    _add_trust_option(p)


def _add_trust_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trust-model-file", action="store_true",
                   help="load a .pt2 MODEL although loading it runs code from the file (torch.export.load "
                        "unpickles parts of it without weights_only): only for files you trust")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the problem and where help is (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"drifttui: error: {one_line(message)}; see `{self.prog} --help`\n")


def _add_capture_options(p: argparse.ArgumentParser) -> None:
    """Options of the capture stage (issue 9)."""
    p.add_argument("--layer-samples", choices=["auto", "all"], default="auto",
                   help="samples compared layer by layer: auto = sample 0 and each sample whose output "
                        "error is a new worst (the output verdict covers every sample); all = every sample")
    p.add_argument("--output-opt-level", choices=["disable", "basic", "extended", "all"], default="all",
                   help="ORT optimisation level of the output pass that gives the verdict on every sample "
                        "(default all, ORT's own default: what you deploy); --opt-level sets the per-layer pass")


def _memory_size(text: str) -> int:
    from drifttui.core.windows import parse_size
    from drifttui.errors import InputError

    try:
        return parse_size(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.args[0] if exc.args else str(exc)) from exc


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="drifttui",
        description="Find where a PyTorch model and its ONNX export stop computing the same numbers.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXIT_CODES_HELP,
    )
    from drifttui.report import ci_outputs

    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = sub.add_parser("check", help="compare layer by layer and name the drift origin (for CI)",
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog=TOLERANCE_HELP + "\n" + ci_outputs.CI_HELP + "\n" + EXIT_CODES_HELP)
    _add_run_options(check)
    check.add_argument("--json", metavar="PATH|-", help="write the JSON report (docs/json-schema.md)")
    ci_outputs.add_options(check)

    diag = sub.add_parser("diagnose", help="check, then run the six debugging steps and the drift checks",
                          formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog=TOLERANCE_HELP + "\n" + ci_outputs.CI_HELP + "\n" + EXIT_CODES_HELP)
    _add_run_options(diag)
    ci_outputs.add_options(diag)
    diag.add_argument("--step", type=int, choices=range(1, 7), metavar="N", help="run only step N (1-6)")
    diag.add_argument("--json", metavar="PATH|-", help="write the JSON report with steps and findings")

    tui = sub.add_parser("tui", help="open the terminal debugger",
                         formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES_HELP)
    _add_run_options(tui)
    tui.add_argument("--report", metavar="FILE", help="browse a saved JSON report (no torch needed)")

    demo = sub.add_parser("demo", help="open the terminal debugger on a built-in drifted example")
    demo.add_argument("--example", default="resnet18-bf16", metavar="NAME", help="which example (default resnet18-bf16)")
    demo.add_argument("--samples", type=int, default=20, metavar="N", help="samples (default 20)")
    demo.add_argument("--debug", action="store_true", help="show tracebacks")

    _add_cause_commands(sub)
    _add_serve_parser(sub)

    ex = sub.add_parser("examples", help="list the built-in example models")
    ex.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    return parser


def config_from_args(args: argparse.Namespace):
    from drifttui.core.result import Config

    if args.example and args.model:
        raise DriftTuiError("give either MODEL or --example, not both", "drop one of them")
    if not args.example and not args.model:
        raise DriftTuiError("no model given", "pass MODEL (file.py:fn, a TorchScript file or a .pt2) or --example NAME")
    atol = rtol = 1e-4
    if args.tolerance is not None:
        atol = rtol = args.tolerance
    if args.atol is not None:
        atol = args.atol
    if args.rtol is not None:
        rtol = args.rtol
    if args.example:
        from drifttui.examples import get_example

        get_example(args.example)
    model = f"example:{args.example}" if args.example else args.model
    return Config(model=model, onnx=args.onnx, inputs=args.inputs, example=args.example,
                  samples=args.samples, seed=args.seed, atol=atol, rtol=rtol, opt_level=args.opt_level,
                  deterministic=args.deterministic, exporter=args.exporter, provider=args.provider,
                  max_memory=getattr(args, "max_memory", None), batch=getattr(args, "batch", 1),
                  trust_model_file=getattr(args, "trust_model_file", False),
                  layer_samples=getattr(args, "layer_samples", "auto"),
                  output_opt_level=getattr(args, "output_opt_level", "all"))


def input_files(config) -> list[str]:
    """The files a run reads (model file, --onnx and its external data, --inputs file): no
    output may name one of them."""
    files: list[str] = []
    for spec in (config.model, config.inputs):
        if not spec or spec.startswith(("example:", "shape:", "python-object:")):
            continue
        head = spec.rsplit(":", 1)[0] if ":" in spec and not os.path.exists(spec) else spec
        if os.path.exists(head):
            files.append(head)
    if config.onnx:
        files.append(config.onnx)
        files.extend(_external_data_files(config.onnx))
    return files


def _external_data_files(path: str) -> list[str]:
    try:
        import onnx
        from onnx.external_data_helper import _get_all_tensors

        proto = onnx.load(path, load_external_data=False)
    except Exception:   # a missing or corrupt file is reported by the run itself
        return []
    folder = os.path.dirname(os.path.abspath(path))
    locations = set()
    for t in _get_all_tensors(proto):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            locations.update(e.value for e in t.external_data if e.key == "location")
    return [os.path.join(folder, loc) for loc in sorted(locations)]


def _progress_printer(enabled: bool):
    from drifttui.api import Progress

    def show(p: Progress) -> None:
        if not enabled:
            return
        if p.stage == "samples":
            sys.stderr.write(f"\r  samples {p.done}/{p.total}")
            sys.stderr.flush()
        elif p.stage == "done":
            sys.stderr.write("\r" + " " * 30 + "\r")
            sys.stderr.flush()
        else:
            sys.stderr.write(f"  {p.message}\n")
            sys.stderr.flush()
    return show


def cmd_check(args: argparse.Namespace, diagnose: bool = False) -> int:
    from drifttui.report import json_report
    from drifttui.report.ci_outputs import CiRun

    config = config_from_args(args)
    if args.json:
        json_report.check_writable(args.json, input_files(config) + ([args.baseline] if args.baseline else []))
    ci = CiRun.prepare(args, input_files(config), "diagnose" if diagnose else "check")
    from drifttui.core.pipeline import run_once
    from drifttui.report.text import print_report

    with ci.errors_reported():     # a run that fails (exit 2/3) still leaves its --junit/--markdown
        show_progress = sys.stderr.isatty() and args.json != "-"
        run = run_once(config, progress=_progress_printer(show_progress))
        result = run.result
        if diagnose:
            from drifttui.core.steps import diagnose as run_diagnose

            result = run_diagnose(run, result, only=args.step)
        elif args.fail_on == "error":     # the gate needs the findings: run the drift checks (not the six steps)
            from drifttui.core.checks import run_checks
            from drifttui.core.diagnosis.context import context_for

            result = result.with_(findings=list(run_checks(context_for(result, run))))
    if args.json == "-":
        json_report.write(result, "-")
    else:
        if diagnose:
            from drifttui.report.steps_text import print_steps

            print_report(result)
            print_steps(result)
        else:
            print_report(result)
        if args.json:
            json_report.write(result, args.json)
    return ci.finish(result, stdout_is_report=args.json == "-")


def cmd_examples(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from drifttui.examples import EXAMPLES

    t = Table(box=None, header_style="bold")
    t.add_column("name")
    t.add_column("expected origin")
    t.add_column("cause")
    t.add_column("description")
    for e in EXAMPLES.values():
        t.add_row(e.name, e.expected_origin or "- (clean)", e.cause or "-", e.description)
    Console().print(t)
    return EXIT_OK


def cmd_tui(args: argparse.Namespace) -> int:
    from drifttui.api import LocalEngine
    from drifttui.tui.app import run_app

    if getattr(args, "report", None):
        from drifttui.report import json_report

        result = json_report.read(args.report)
        result = result.with_(config=rebase_config(result.config, os.path.dirname(os.path.abspath(args.report))))
        return run_app(LocalEngine(), config=None, result=result)
    config = config_from_args(args)
    return run_app(LocalEngine(), config=config)


def _rebase_spec(spec: Optional[str], folder: str) -> Optional[str]:
    """``spec`` (a path, or ``file.py:fn``) made absolute against ``folder`` when it is relative
    and exists there; examples and shape specs are left alone."""
    if not spec or spec.startswith(("example:", "shape:")):
        return spec
    head, sep, tail = spec.rpartition(":") if ":" in spec and not os.path.exists(spec) else (spec, "", "")
    if os.path.isabs(head):
        return spec
    candidate = os.path.join(folder, head)
    return (candidate + sep + tail) if os.path.exists(candidate) else spec


def rebase_config(config, folder: str):
    """A report's configuration with its relative paths resolved against the report's folder,
    so `tui --report` reruns work from any directory."""
    import dataclasses

    return dataclasses.replace(config, model=_rebase_spec(config.model, folder),
                               onnx=_rebase_spec(config.onnx, folder), inputs=_rebase_spec(config.inputs, folder))


# -- drifttui serve: the TUI in a browser (textual-serve) ---------------------------------
SERVE_EPILOG = """examples:
  drifttui serve                         # the demo at http://127.0.0.1:8000
  drifttui serve --port 9000 -- tui model.py:build --onnx model.onnx
  drifttui serve --host 0.0.0.0 -- tui --report r.json   # reachable from other machines"""


def _add_serve_parser(sub) -> None:
    serve = sub.add_parser("serve", help="serve the terminal debugger in a web browser (textual-serve)",
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=SERVE_EPILOG)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("app_args", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                       help="the drifttui command each browser session runs (default: demo)")
    serve.add_argument("--debug", action="store_true", help="show tracebacks")


def serve_command(app_args: list[str]) -> str:
    """The shell command textual-serve runs per session: this Python, ``-m drifttui ...``."""
    import shlex

    from drifttui.errors import InputError

    args = [a for a in app_args if a != "--"] if app_args and app_args[0] == "--" else list(app_args)
    args = args or ["demo"]
    if args[0] == "serve":
        raise InputError("drifttui serve cannot serve itself", "give a command such as `-- tui MODEL` or `-- demo`")
    return shlex.join([sys.executable, "-m", "drifttui", *args])


def cmd_serve(args: argparse.Namespace) -> int:
    from drifttui.errors import InputError

    if not 0 < args.port < 65536:
        raise InputError(f"--port {args.port} is not a port number", "give a port between 1 and 65535")
    try:
        from textual_serve.server import Server
    except ImportError as exc:
        raise InputError("drifttui serve needs textual-serve", 'install it: pip install "drifttui[serve]"') from exc
    command = serve_command(args.app_args)
    sys.stderr.write(f"drifttui: serving `{command}` at http://{args.host}:{args.port} (ctrl+c stops)\n")
    Server(command, host=args.host, port=args.port, title="drifttui").serve()
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from drifttui.api import LocalEngine
    from drifttui.core.result import Config
    from drifttui.examples import get_example
    from drifttui.tui.app import run_app

    get_example(args.example)
    config = Config(model=f"example:{args.example}", example=args.example, samples=args.samples)
    return run_app(LocalEngine(), config=config)


# --- verified causes: repro and repair (issue 8) ------------------------------------------
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


def _explained(config: Any) -> tuple[Any, Any, Any]:
    """Run, then the checks verified at the origin: (session, result, explanation)."""
    from drifttui.core.causes import explain
    from drifttui.core.checks import run_checks
    from drifttui.core.diagnosis.context import context_for
    from drifttui.core.pipeline import run_once

    run = run_once(config, progress=_progress_printer(sys.stderr.isatty()))
    ctx = context_for(run.result, run)
    exp = explain(ctx, run_checks(ctx, static_only=True))
    return run, run.result, exp


def cmd_repro(args: argparse.Namespace) -> int:
    from drifttui.core.causes.repro import check_dir, summary, write_case

    config = config_from_args(args)
    check_dir(args.out, input_files(config))
    _, result, exp = _explained(config)
    if result.drift_origin is None or exp.case is None:
        why = "no drift origin" if result.drift_origin is None else "the origin's nodes could not be cut out"
        print(f"nothing to reproduce: {why} (verdict {result.verdict}); no folder written")
        return EXIT_OK if result.verdict == "ok" else EXIT_DRIFT
    ev = write_case(exp.case, args.out, exp.loc.note if exp.loc else "")
    s = summary(exp.case, ev, args.out)
    print(f"wrote {args.out}: {s['nodes']} node(s) of {s['module'] or '(root)'}, PyTorch-side inputs and outputs "
          f"of sample {s['sample']}")
    print(f"onnxruntime on model.onnx differs from the torch outputs by {s['max_abs']:.4g}: "
          + ("the drift reproduces" if s["reproduces"] else "within tolerance (the drift does NOT reproduce alone)"))
    print(f"run it: cd {args.out} && see README.md (onnxruntime alone)")
    return EXIT_DRIFT if s["reproduces"] else EXIT_OK


def _out_metrics(result: Any) -> tuple[float, Optional[float]]:
    worst = max((o.metrics.max_abs.worst for o in result.outputs), default=0.0)
    top1 = [o.top1_agreement for o in result.outputs if o.top1_agreement is not None]
    return worst, (min(top1) if top1 else None)


def cmd_repair(args: argparse.Namespace) -> int:
    from drifttui.core.causes.repair import recheck, repair
    from drifttui.report.outputs import check_output, write_atomic_bytes

    config = config_from_args(args)
    check_output(args.out, "--out", input_files(config))
    run, result, exp = _explained(config)
    if result.drift_origin is None:
        print(f"nothing to repair: no drift origin (verdict {result.verdict}); no file written")
        return EXIT_OK if result.verdict == "ok" else EXIT_DRIFT
    fixed = repair(run.prepared.index.model, exp)
    if fixed.model is None:
        head = exp.findings[0] if exp.findings else None
        extra = f"; the fix: {head.fix}" if head is not None and head.fix else ""
        what = "a verified re-export" if fixed.not_applicable else "no verified ONNX-level patch"
        print(f"cannot repair the file: {what} for {result.drift_origin.module}{extra}; no file written")
        return EXIT_DRIFT
    after = recheck(config, fixed.model)
    write_atomic_bytes(args.out, fixed.model.SerializeToString(), "--out")
    b_abs, b_top = _out_metrics(result)
    a_abs, a_top = _out_metrics(after)
    fmt = lambda v: "-" if v is None else f"{v:.4g}"  # noqa: E731
    print(f"applied {len(fixed.applied)} patch(es): " + "; ".join(
        f"{p['op']} {p.get('node') or p.get('name')}" + (f" {p['name']}={p['value']}" if p["op"] == "set_attribute" else "")
        for p in fixed.applied))
    print(f"{'':24}{'before':>12}{'after':>12}")
    print(f"{'origin local max |d|':24}{fmt(fixed.local_before):>12}{fmt(fixed.local_after):>12}")
    print(f"{'output max |d|':24}{fmt(b_abs):>12}{fmt(a_abs):>12}")
    print(f"{'top-1 agreement':24}{fmt(b_top):>12}{fmt(a_top):>12}")
    print(f"check on the repaired copy: {after.verdict}; wrote {args.out}")
    return EXIT_DRIFT if after.verdict == "drift" else EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # argparse: 2 for bad usage, 0 for --help
        return int(exc.code or 0)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    debug = getattr(args, "debug", False) or os.environ.get("DRIFTTUI_DEBUG") == "1"
    handlers = {"check": cmd_check, "diagnose": lambda a: cmd_check(a, diagnose=True), "examples": cmd_examples,
                "tui": cmd_tui, "demo": cmd_demo, "repro": cmd_repro, "repair": cmd_repair,
                "serve": cmd_serve}
    with _signals_end_the_run():
        try:
            return handlers[args.command](args)
        except DriftTuiError as exc:
            if debug:
                raise
            sys.stderr.write(f"drifttui: error: {one_line(str(exc))}\n")
            return exc.exit_code
        except KeyboardInterrupt:
            sys.stderr.write("drifttui: interrupted; temporary files removed, no report written\n")
            return EXIT_INTERRUPTED
        except Terminated as exc:
            sys.stderr.write(f"drifttui: stopped by {exc.name}; temporary files removed, no report written\n")
            return exc.exit_code
        except Exception as exc:
            if debug:
                raise
            sys.stderr.write(f"drifttui: error: {unexpected_failure(exc)}\n")
            return EXIT_RUNTIME


def unexpected_failure(exc: BaseException) -> str:
    """The one line for an exception no drifttui check anticipated: out of memory, a dependency
    that failed (named), or -- only when the error arose in drifttui's own code -- an internal bug."""
    text = first_line(exc)[:300]
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "not enough memory" in text:
        return (f"out of memory ({type(exc).__name__}: {text}); compare fewer or smaller inputs, or give "
                "--max-memory SIZE")
    dep = failing_dependency(exc)
    if dep:
        return (f"{dep} failed: {type(exc).__name__}: {text}; this is an error inside {dep} on this model "
                "(rerun with --debug for the traceback, and check the versions of torch, onnx and onnxruntime)")
    return (f"internal failure: {type(exc).__name__}: {text}; rerun with --debug and report the traceback")


@contextlib.contextmanager
def _signals_end_the_run() -> Iterator[None]:
    """SIGTERM and SIGHUP (CI timeouts, ``timeout``, ``docker stop``, a closed terminal) unwind the
    run like Ctrl-C: ``finally`` blocks remove the temp workdir, then main returns 128 + signum."""
    import signal

    def stop(signum: int, frame: object) -> None:
        for s in wanted:            # a second signal must not interrupt the clean-up
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(signum, signal.Signals(signum).name)

    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {}
    for s in wanted:
        try:
            previous[s] = signal.signal(s, stop)
        except (ValueError, OSError):   # not the main thread (embedded use): leave signals alone
            pass
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
