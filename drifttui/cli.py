"""Command line: thin layer from arguments to the staged pipeline, a report and an exit code."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from drifttui.errors import EXIT_DRIFT, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, DriftTuiError, first_line

EXIT_CODES_HELP = """exit codes:
  0  no drift at the tolerance
  1  drift found
  2  bad usage or bad input (one line on stderr names the problem and the fix)
  3  the model or the runtime failed (export error, ONNX Runtime cannot run the graph, NaN outputs)
"""

TOLERANCE_HELP = """tolerance rule:
  an element passes when |torch - onnx| <= atol + rtol * scale, where scale is the largest |torch|
  value of that layer's output in that sample (relative to the layer's scale). A layer drifts when
  any element fails in any sample. Defaults atol=1e-4, rtol=1e-4 pass float32 noise between
  PyTorch and ONNX Runtime on real models (~1e-6 relative per layer).
"""

MODEL_HELP = ("path/to/file.py:fn or package.module:fn returning an nn.Module, a TorchScript file "
              "(.pt/.ts), or an ExportedProgram (.pt2)")


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
    p.add_argument("--exporter", choices=["dynamo", "torchscript"], default="dynamo",
                   help="exporter used when no --onnx is given (default dynamo)")
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
    parser = argparse.ArgumentParser(
        prog="drifttui",
        description="Find where a PyTorch model and its ONNX export stop computing the same numbers.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXIT_CODES_HELP,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = sub.add_parser("check", help="compare layer by layer and name the drift origin (for CI)",
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog=TOLERANCE_HELP + "\n" + EXIT_CODES_HELP)
    _add_run_options(check)
    check.add_argument("--json", metavar="PATH|-", help="write the JSON report (docs/json-schema.md)")

    diag = sub.add_parser("diagnose", help="check, then run the six debugging steps and the drift checks",
                          formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog=TOLERANCE_HELP + "\n" + EXIT_CODES_HELP)
    _add_run_options(diag)
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
                  layer_samples=getattr(args, "layer_samples", "auto"),
                  output_opt_level=getattr(args, "output_opt_level", "all"))


def input_files(config) -> list[str]:
    """The files a run reads (model file, --onnx and its external data, --inputs file): no
    output may name one of them."""
    files: list[str] = []
    for spec in (config.model, config.inputs):
        if not spec or spec.startswith(("example:", "shape:")):
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

    config = config_from_args(args)
    if args.json:
        json_report.check_writable(args.json, input_files(config))
    from drifttui.core.pipeline import run_once
    from drifttui.report.text import print_report

    show_progress = sys.stderr.isatty() and args.json != "-"
    run = run_once(config, progress=_progress_printer(show_progress))
    result = run.result
    if diagnose:
        from drifttui.core.steps import diagnose as run_diagnose

        result = run_diagnose(run, result, only=args.step)
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
    return EXIT_DRIFT if result.verdict == "drift" else EXIT_OK


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
        return run_app(LocalEngine(), config=None, result=result)
    config = config_from_args(args)
    return run_app(LocalEngine(), config=config)


def cmd_demo(args: argparse.Namespace) -> int:
    from drifttui.api import LocalEngine
    from drifttui.core.result import Config
    from drifttui.examples import get_example
    from drifttui.tui.app import run_app

    get_example(args.example)
    config = Config(model=f"example:{args.example}", example=args.example, samples=args.samples)
    return run_app(LocalEngine(), config=config)


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
                "tui": cmd_tui, "demo": cmd_demo}
    try:
        return handlers[args.command](args)
    except DriftTuiError as exc:
        if debug:
            raise
        sys.stderr.write(f"drifttui: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("drifttui: interrupted\n")
        return 130
    except Exception as exc:
        if debug:
            raise
        first = first_line(exc)
        sys.stderr.write(f"drifttui: error: internal failure: {type(exc).__name__}: {first[:300]}; "
                         "rerun with --debug and report the traceback\n")
        return EXIT_RUNTIME


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
