"""Command line: thin layer from arguments to the staged pipeline, a report and an exit code."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Iterator, Optional, Sequence

from drifttui.cli_causes import _add_cause_commands, cmd_repair, cmd_repro
from drifttui.cli_common import (EXIT_CODES_HELP, MODEL_HELP, TOLERANCE_HELP, OneLineParser,  # noqa: F401
                                 _add_run_options, _progress_printer, config_from_args, input_files, process_age)
from drifttui.cli_compose import (add_compose_commands, auto_tolerance, cmd_bisect, cmd_onnx_pair, cmd_tolerance,
                                  wants_onnx_pair)
from drifttui.cli_serve import _add_serve_parser, cmd_serve, serve_command  # noqa: F401
from drifttui.errors import (EXIT_INTERRUPTED, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, DriftTuiError, Terminated,
                             environment_failure, failing_dependency, first_line, one_line)



def _version() -> str:
    """The installed distribution's version (pyproject.toml), without importing torch."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("drifttui")
    except PackageNotFoundError:      # run from a checkout that is not installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="drifttui",
        description="Find where a PyTorch model and its ONNX export stop computing the same numbers.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXIT_CODES_HELP,
    )
    from drifttui.report import ci_outputs

    parser.add_argument("--version", action="version", version=f"drifttui {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = sub.add_parser("check", help="compare layer by layer and name the drift origin (for CI)",
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog=TOLERANCE_HELP + "\n" + ci_outputs.CI_HELP + "\n" + EXIT_CODES_HELP)
    _add_run_options(check)
    check.add_argument("--json", metavar="PATH|-", help="write the JSON report (docs/json-schema.md)")
    ci_outputs.add_options(check)
    _add_overlay_option(check)

    diag = sub.add_parser("diagnose", help="check, then run the six debugging steps and the drift checks",
                          formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog=TOLERANCE_HELP + "\n" + ci_outputs.CI_HELP + "\n" + EXIT_CODES_HELP)
    _add_run_options(diag)
    ci_outputs.add_options(diag)
    diag.add_argument("--step", type=int, choices=range(1, 7), metavar="N", help="run only step N (1-6)")
    diag.add_argument("--json", metavar="PATH|-", help="write the JSON report with steps and findings")
    _add_overlay_option(diag)

    tui = sub.add_parser("tui", help="open the terminal debugger",
                         formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES_HELP)
    _add_run_options(tui)
    tui.add_argument("--report", metavar="FILE", help="browse a saved JSON report (no torch needed)")
    tui.add_argument("--stages", nargs="+", metavar="FILE",
                     help="a deployment pipeline's ONNX files in order (raw export first): `b` shows the stage "
                          "bisect (docs/bisect.md)")

    demo = sub.add_parser("demo", help="open the terminal debugger on a built-in drifted example")
    demo.add_argument("--example", default="resnet18-bf16", metavar="NAME", help="which example (default resnet18-bf16)")
    demo.add_argument("--samples", type=int, default=20, metavar="N", help="samples (default 20)")
    demo.add_argument("--debug", action="store_true", help="show tracebacks")

    _add_cause_commands(sub)
    add_compose_commands(sub)
    _add_serve_parser(sub)

    ex = sub.add_parser("examples", help="list the built-in example models")
    ex.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    return parser


def _add_overlay_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-explorer", metavar="PATH", dest="model_explorer",
                   help="write Google Model Explorer node data: PATH (each ONNX node's error / tolerance), "
                        "PATH's .own and .status siblings (open: model-explorer FILE.onnx --extensions="
                        "model_explorer_onnx --node_data_paths=...; needs drifttui[overlay])")


def _overlay(args: argparse.Namespace, config, check_only: bool = False, result=None, engine=None) -> None:
    """``--model-explorer``: checked before the run (every file it writes), written after it.  When
    drifttui exported the model itself (no ``--onnx``), the file it compared is written beside the
    node data (``PATH``'s ``.onnx`` sibling): the temp dir it lived in is gone after the run."""
    if not getattr(args, "model_explorer", None):
        return
    from drifttui.report import model_explorer
    from drifttui.report.escape import terminal
    from drifttui.report.outputs import check_output, write_atomic, write_model

    files = model_explorer.paths(args.model_explorer)
    own_export = model_explorer.export_path(args.model_explorer) if not config.onnx else None
    if check_only:
        model_explorer.builder()                 # installed? say so before the run, not after it
        for path in list(files.values()) + ([own_export] if own_export else []):
            check_output(path, "--model-explorer", input_files(config))
        return
    for kind, text in model_explorer.render(result).items():
        write_atomic(files[kind], text, "--model-explorer")
    model = config.onnx
    exported = engine.compared_model(result) if own_export and engine is not None else None
    if exported is not None:
        write_model(own_export, exported, "--model-explorer")
        model = own_export
    sys.stderr.write(f"drifttui: Model Explorer node data: model-explorer {terminal(model or '<the ONNX file>')} "
                     f"--extensions=model_explorer_onnx "
                     f"--node_data_paths={','.join(terminal(p) for p in files.values())}\n")
    nodes = model_explorer.origin_nodes(result)
    if nodes:       # Model Explorer opens on the collapsed graph: say where the origin is
        sys.stderr.write(f"drifttui: the origin's ONNX node(s), for Model Explorer's search box: "
                         f"{terminal(', '.join(nodes[:5]))}\n")
    url = model_explorer.origin_url(result, model, files) if nodes and model else None
    if url:
        sys.stderr.write("drifttui: or open it with the origin selected: model-explorer --extensions=model_explorer_onnx "
                         f"--no_open_in_browser, then {url}\n")


def cmd_check(args: argparse.Namespace, diagnose: bool = False) -> int:
    from drifttui.report import json_report
    from drifttui.report.ci_outputs import CiRun

    if not diagnose and wants_onnx_pair(args):
        return cmd_onnx_pair(args)
    config = config_from_args(args)
    if args.json:
        json_report.check_writable(args.json, input_files(config) + ([args.baseline] if args.baseline else []))
    ci = CiRun.prepare(args, input_files(config), "diagnose" if diagnose else "check")
    _overlay(args, config, check_only=True)
    _remove_leftovers(args)
    from drifttui.core.explain import STEP_NUMBERS
    from drifttui.core.pipeline import Pipeline
    from drifttui.report.console import report_console
    from drifttui.report.text import print_report

    with ci.errors_reported():     # a run that fails (exit 2/3) still leaves its --junit/--markdown
        engine = Pipeline()
        startup = process_age()
        progress = _progress_printer()      # stderr: live in a terminal, a line per stage in a log
        auto_note = ""
        if getattr(args, "tolerance", None) == "auto":
            config, auto_note = auto_tolerance(config, progress, engine)
        result = _run(engine, config, progress)
        if auto_note:
            result = result.with_(notes=[auto_note] + list(result.notes))
        if startup is not None:       # the interpreter and the imports, before the first stage
            result = result.with_(timings={**result.timings, "startup": round(startup, 2)})
        if diagnose:
            steps = [args.step] if args.step else list(STEP_NUMBERS)
            result = engine.explain(result, steps, progress=progress).result
        elif args.fail_on == "error":     # the gate reads the verified findings (not the six steps)
            result = engine.explain(result, progress=progress).result
    decision = ci.decide(result)
    _overlay(args, config, result=result, engine=engine)
    if args.json == "-":
        json_report.write(result, "-")
        return ci.finish(result, stdout_is_report=True, decision=decision)
    console = report_console()
    print_report(result, console, decision=decision, gate=ci.gate)
    if diagnose:
        from drifttui.report.steps_text import print_steps

        print_steps(result, console)
    if args.json:
        json_report.write(result, args.json)
    return ci.finish(result, decision=decision, report_printed=True)


def _run(engine, config, progress):
    """One run: the plain pipeline, or the served comparison (Triton, --batch-sweep: core/compose)."""
    from drifttui.core.compose import served

    if served.wanted(config):
        return served.run(engine, config, progress)
    return engine.run(config, progress=progress).result


def _remove_leftovers(args: argparse.Namespace) -> None:
    """A run killed while writing a report leaves ``.drifttui-*.tmp`` next to it: removed (and said)."""
    from drifttui.report.escape import terminal
    from drifttui.report.outputs import remove_leftovers

    paths = [getattr(args, flag, None) for flag in ("json", "junit", "markdown", "gitlab", "html")]
    folders = {os.path.dirname(os.path.abspath(p)): p for p in paths if p and p != "-"}
    for path in folders.values():
        for left in remove_leftovers(path):
            sys.stderr.write(f"drifttui: removed {terminal(left)}, a partial report a killed run left\n")


def cmd_examples(args: argparse.Namespace) -> int:
    """The static catalogue: no torch import (drifttui.core.model.examples.catalogue)."""
    from rich.table import Table

    from drifttui.core.model.examples.catalogue import CATALOGUE
    from drifttui.report.console import report_console

    t = Table(box=None, header_style="bold")
    t.add_column("name", no_wrap=True)
    t.add_column("expected origin", no_wrap=True)
    t.add_column("cause", no_wrap=True)
    t.add_column("description")
    for e in CATALOGUE.values():
        t.add_row(e.name, e.expected_origin or "- (clean)", e.cause or "-", e.description)
    report_console().print(t)
    return EXIT_OK


def cmd_tui(args: argparse.Namespace) -> int:
    from drifttui.api import LocalEngine
    from drifttui.tui.app import run_app

    if getattr(args, "report", None):
        from drifttui.report import json_report

        if getattr(args, "stages", None):
            raise DriftTuiError("tui --report does not take --stages", "run `drifttui tui MODEL --stages ...`")

        result = json_report.read(args.report)
        result = result.with_(config=rebase_config(result.config, os.path.dirname(os.path.abspath(args.report))))
        return run_app(LocalEngine(), config=None, result=result)
    stages = list(args.stages or [])
    if stages:
        _stage_files(stages)
        if args.onnx:
            raise DriftTuiError("tui --stages reads the files from --stages, not --onnx", "drop --onnx")
        args.onnx = stages[-1]          # the table shows the deployed file; `b` bisects the stages
    config = config_from_args(args)
    return run_app(LocalEngine(), config=config, stages=stages)


def _stage_files(stages: list[str]) -> None:
    """`tui --stages`: the files exist, two at least (core/compose/stage_bisect.validate_stages says the
    same, but importing it loads torch before the screen is up)."""
    if len(stages) < 2:
        raise DriftTuiError("--stages needs at least two files (the raw export first, the deployed file last)",
                            "give --stages RAW.onnx [STEP.onnx ...] DEPLOYED.onnx")
    for s in stages:
        if not os.path.isfile(s):
            raise DriftTuiError(f"stage file {s} does not exist", "give the ONNX files of the pipeline, in order")


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


def cmd_demo(args: argparse.Namespace) -> int:
    from drifttui.api import LocalEngine
    from drifttui.core.result import Config
    from drifttui.core.model.examples import get_example
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
                "tui": cmd_tui, "demo": cmd_demo, "repro": cmd_repro, "repair": cmd_repair,
                "bisect": cmd_bisect, "tolerance": cmd_tolerance,
                "serve": cmd_serve}
    with _signals_end_the_run(), _no_foreign_commands(args.command not in ("tui", "demo", "serve")):
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
            refused = environment_failure(exc)      # a full disk, a busy port...: exit 2, said as such
            if refused is not None:
                sys.stderr.write(f"drifttui: error: {one_line(str(refused))}\n")
                return refused.exit_code
            sys.stderr.write(f"drifttui: error: {one_line(unexpected_failure(exc))}\n")
            return EXIT_RUNTIME


def entry() -> None:
    """The ``drifttui`` command: ``main``, then the process ends without the interpreter's teardown
    once torch is loaded (freeing a big model's tensors and ORT sessions one by one took seconds after
    the report was written; the TUI does the same, tui/app.py).  Every report is written atomically
    and closed by then, and the exit handlers still run (they remove the temporary folders)."""
    code = main()
    if "torch" not in sys.modules:
        sys.exit(code)
    from drifttui.signals import end_now

    end_now(code)


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
def _no_foreign_commands(enabled: bool) -> Iterator[None]:
    """No line printed on stdout or stderr starts with ``::`` (a GitHub Actions workflow
    command) unless drifttui writes it as its own annotation (report.escape.CommandGuard)."""
    if not enabled:
        yield
        return
    from drifttui.report.escape import CommandGuard

    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = CommandGuard(sys.stdout), CommandGuard(sys.stderr)    # type: ignore[assignment]
    try:
        yield
    finally:
        for guard in (sys.stdout, sys.stderr):
            if isinstance(guard, CommandGuard):
                guard.flush_pending()
        sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _signals_end_the_run() -> Iterator[None]:
    """SIGTERM and SIGHUP (CI timeouts, ``timeout``, ``docker stop``, a closed terminal) unwind the
    run like Ctrl-C: ``finally`` blocks remove the temp workdir, then main returns 128 + signum."""
    import signal

    from drifttui.signals import STOP_SIGNALS, on_stop_signals

    def stop(signum: int, frame: object) -> None:
        for s in STOP_SIGNALS:      # a second signal must not interrupt the clean-up
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(signum, signal.Signals(signum).name)

    with on_stop_signals(stop):
        yield


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
