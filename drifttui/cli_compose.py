"""`bisect` (which stage of a deployment pipeline first drifts, and which pass) and `tolerance`
(the tolerance from the measured noise floor); `check --tolerance auto` uses the latter."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from drifttui.cli_common import EXIT_CODES_HELP, _add_run_options, _progress_printer, config_from_args
from drifttui.errors import EXIT_DRIFT, EXIT_OK, InputError


def add_compose_commands(sub: Any) -> None:
    bis = sub.add_parser("bisect", help="which file of a deployment pipeline first drifts, and which pass",
                         formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES_HELP)
    _add_run_options(bis)
    bis.add_argument("--stages", nargs="+", required=True, metavar="FILE",
                     help="the pipeline's ONNX files in order: the raw export first, the deployed file last")
    bis.add_argument("--json", metavar="PATH|-", help="write the bisect as JSON")
    tol = sub.add_parser("tolerance", help="the tolerance from the model's measured noise floor",
                         formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES_HELP)
    _add_run_options(tol)
    tol.add_argument("--json", metavar="PATH|-", help="write the floor and the advice as JSON")


def _say(text: str) -> None:
    from drifttui.report.escape import terminal

    sys.stdout.write(terminal(text, keep_newlines=True) + "\n")


def _write_json(path: str, data: dict[str, Any], inputs: list[str]) -> None:
    from drifttui.core.result.codec import clean
    from drifttui.report.outputs import check_output, write_atomic

    text = json.dumps(clean(data), indent=2, default=str)
    if path == "-":
        sys.stdout.write(text + "\n")
    else:
        check_output(path, "--json", inputs)
        write_atomic(path, text + "\n", "--json")


def cmd_bisect(args: argparse.Namespace) -> int:
    from drifttui.cli_common import input_files
    from drifttui.core.compose.stage_bisect import bisect_stages, validate_stages

    if args.onnx:
        raise InputError("bisect reads its files from --stages, not --onnx", "drop --onnx")
    validate_stages(args.stages)
    args.onnx = args.stages[-1]
    config = dataclasses.replace(config_from_args(args), onnx=None)
    res = bisect_stages(config, list(args.stages), _progress_printer())
    if args.json:
        _write_json(args.json, res.to_dict(), input_files(config) + list(args.stages))
        if args.json == "-":
            return EXIT_DRIFT if res.first is not None else EXIT_OK
    for row in res.stages:
        d = row.to_dict()
        vs = d["vs_previous"]
        prev = "" if vs is None else (f"; vs stage {row.index - 1}: max|d| {vs['max_abs']:.3g} "
                                      f"({'over' if vs.get('fails') else 'within'} {vs['judged']})"
                                      if vs.get("compared") else f"; vs stage {row.index - 1}: {vs['why']}")
        _say(f"stage {row.index} {row.path}: {d['verdict']} ({d['precision']}), outputs max|d| "
             f"{d['outputs_max_abs']:.3g}" + (f", origin {d['origin']}" if d["origin"] else "") + prev)
    _say(res.summary)
    if res.passes is not None and res.passes.settings:
        _say("settings that avoid it:\n" + "\n".join(res.passes.settings.values()))
        if res.passes.offline:
            off = res.passes.offline
            _say(f"offline: the previous file optimised again at {off['level']} without "
                 f"{', '.join(off['disabled'])}: drift {'gone' if off['drift_gone'] else 'still there'}")
    if res.sim and res.sim.get("setting"):
        _say(f"setting that avoids it: {res.sim['setting']}")
    elif res.sim and res.sim.get("why"):
        _say(res.sim["why"])
    return EXIT_DRIFT if res.first is not None else EXIT_OK


def cmd_tolerance(args: argparse.Namespace) -> int:
    from drifttui.cli_common import input_files
    from drifttui.core.compose.noise_floor import measure
    from drifttui.core.compose.tolerance_advice import advise, report

    config = config_from_args(args)
    nf = measure(config, _progress_printer())
    adv = advise(nf)
    if args.json:
        _write_json(args.json, report(nf, adv), input_files(config))
        if args.json == "-":
            return EXIT_OK
    for line in adv.lines:
        _say(line)
    worst = sorted(nf.layers, key=lambda f: -f.max_rel)[:5]
    for f in worst + nf.outputs:
        _say(f"  {f.kind} {f.name}: max|d| {f.max_abs:.3g}, relative {f.max_rel:.3g}, 1-cos {f.one_minus_cos:.3g} "
             f"(worst at {f.worst_variant})")
    return EXIT_OK


def auto_tolerance(config: Any, progress: Any, engine: Any = None) -> tuple[Any, str]:
    """``config`` with the advised tolerance, and the note that says so (check --tolerance auto)."""
    from drifttui.core.compose.noise_floor import measure
    from drifttui.core.compose.tolerance_advice import advise

    adv = advise(measure(config, progress, pipeline=engine))    # the engine's Prepared: one export
    note = (f"tolerance auto: atol {adv.atol:g}, rtol {adv.rtol:g} = {adv.margin:g}x the noise floor measured "
            f"at ORT levels disable and all, 1 and many threads (tightest: {adv.tightest or '-'})")
    note += "".join(f"; {line}" for line in adv.lines if line.startswith("left out as drift"))
    return dataclasses.replace(config, atol=adv.atol, rtol=adv.rtol), note


def wants_onnx_pair(args: argparse.Namespace) -> bool:
    """`check --onnx NEW --reference-onnx OLD` with no MODEL: the two files, layer by layer."""
    return not getattr(args, "model", None) and not getattr(args, "example", None) \
        and bool(getattr(args, "onnx", None)) and bool(getattr(args, "reference_onnx", None))


def cmd_onnx_pair(args: argparse.Namespace) -> int:
    from drifttui.core.compose.onnx_pair import compare_files

    for flag, path in (("--onnx", args.onnx), ("--reference-onnx", args.reference_onnx)):
        import os

        if not os.path.isfile(path):
            raise InputError(f"{flag} {path} does not exist", "give an existing ONNX file")
    atol = rtol = args.tolerance if isinstance(args.tolerance, float) else 1e-4
    atol = args.atol if args.atol is not None else atol
    rtol = args.rtol if args.rtol is not None else rtol
    res = compare_files(args.onnx, args.reference_onnx, args.inputs, args.samples, args.seed, atol, rtol)
    if args.json:
        _write_json(args.json, {"origin": res.origin, "samples": res.samples, "flavour": res.flavour,
                                "layers": [dataclasses.asdict(L) for L in res.layers], "outputs": res.outputs},
                    [args.onnx, args.reference_onnx])
        if args.json == "-":
            return EXIT_DRIFT if res.drifts else EXIT_OK
    _say(("DRIFT: origin " + (res.origin or "(outputs only)")) if res.drifts else "OK: the two files agree")
    _say(f"{args.onnx} against {args.reference_onnx} (the reference plays torch's role; its modules are the "
         f"layer names), {res.samples} sample(s), |d| <= {atol:g} + {rtol:g} * scale")
    for L in res.layers:
        status = "drift" if L.fails and not L.inherited else "inherited" if L.fails else \
            "ok" if L.values else "not in the new file"
        _say(f"  {L.module or '(root)'}: {status}, max|d| {L.max_abs:.3g}, max rel {L.max_rel:.3g}"
             + (f" ({len(L.missing)} value(s) gone from the new file)" if L.missing and L.values else ""))
    for o in res.outputs:
        _say(f"output {o['name']}: max|d| {o['max_abs']:.3g}, max rel {o['max_rel']:.3g}"
             + (" FAIL" if o["fails"] else ""))
    return EXIT_DRIFT if res.drifts else EXIT_OK
