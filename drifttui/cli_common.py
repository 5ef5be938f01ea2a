"""What every drifttui command shares: the help texts, the run options, the Config they make,
the run's input files (no output may name one) and the progress printer."""
from __future__ import annotations

import argparse
import os

from drifttui.core.result import OPT_LEVELS, Config

_D = Config(model="")      # the run defaults, one source: every option default below reads them
from drifttui.errors import EXIT_USAGE, DriftTuiError, one_line

EXIT_CODES_HELP = """exit codes:
  0  no drift at the tolerance (or the gate passes: --fail-on never, a drift the --baseline carries)
  1  drift found (or an error finding with --fail-on error, or top-1 agreement below --min-top1)
  2  bad usage or bad input (one line on stderr names the problem and the fix)
  3  the model or the runtime failed (export error, ONNX Runtime cannot run the graph, NaN outputs)
  4  repro / repair only: there is a drift origin, but no test case can be cut out of it or no
     verified patch can be applied to the file (one line says why)
  129, 130, 143  stopped by SIGHUP, Ctrl-C (SIGINT), SIGTERM: temporary files removed, no report written
"""

def _tolerance_help() -> str:
    from drifttui.core.result import RULE_FORMULA, RULE_SCALE

    return ("tolerance rule:\n"
            f"  an element passes when {RULE_FORMULA}, where {RULE_SCALE}\n"
            "  (relative to the layer's scale). A layer drifts when any element fails in any sample. Defaults\n"
            "  atol=1e-4, rtol=1e-4 pass float32 noise between PyTorch and ONNX Runtime on real models (~1e-6\n"
            "  relative per layer).\n"
            "  float16 / bfloat16 values: rtol_eff = max(rtol, 4 * eps), eps = 2^-10 (float16), 2^-7 (bfloat16).\n"
            "  The report prints this rule in one line (`rule: ...`); docs/cli.md \"Tolerance\" has the details.\n")


TOLERANCE_HELP = _tolerance_help()

MODEL_HELP = ("path/to/file.py:fn or package.module:fn returning an nn.Module, a TorchScript file "
              "(.pt/.ts), or an ExportedProgram (.pt2, only with --trust-model-file)")


def _add_run_options(p: argparse.ArgumentParser, model_optional: bool = False) -> None:
    p.add_argument("model", nargs="?", metavar="MODEL", help=MODEL_HELP)
    p.add_argument("--example", metavar="NAME", help="run a built-in example instead of MODEL (see `drifttui examples`)")
    p.add_argument("--onnx", metavar="FILE", help="the deployed ONNX file (default: export MODEL into a temp dir)")
    p.add_argument("--reference-onnx", metavar="RAW", dest="reference_onnx",
                   help="the file before onnxsim/onnxslim/ORT optimisation: its mapping is carried over onto "
                        "--onnx by structure and numerics (default: drifttui exports one when --onnx lost the "
                        "exporter's metadata)")
    p.add_argument("--inputs", metavar="SPEC",
                   help="file.py:fn / pkg.mod:fn returning tensor(s), a .npz/.npy/.pt file, or "
                        "shape:1x3x224x224 (';' between inputs, dtype prefix like int64:1x16)")
    p.add_argument("--samples", type=int, default=_D.samples, metavar="N", help=f"samples to compare (default {_D.samples})")
    p.add_argument("--seed", type=int, default=_D.seed, metavar="S", help=f"sample i is drawn with seed S+i (default {_D.seed})")
    p.add_argument("--atol", type=float, default=None, metavar="A", help=f"absolute tolerance (default {_D.atol:g})")
    p.add_argument("--rtol", type=float, default=None, metavar="R",
                   help=f"tolerance relative to the layer's scale (default {_D.rtol:g})")
    p.add_argument("--tolerance", type=_tolerance, default=None, metavar="T|auto",
                   help="shorthand: atol = rtol = T; auto: from the model's measured noise floor (`drifttui tolerance`)")
    p.add_argument("--opt-level", choices=list(OPT_LEVELS), default=_D.opt_level,
                   help=f"ONNX Runtime level of the per-layer pass (default {_D.opt_level}: fusions would hide values; "
                        "when only --output-opt-level drifts, the layers are compared again there, with a note)")
    p.add_argument("--deterministic", action="store_true",
                   help="deterministic torch algorithms; ORT single-threaded without memory arena")
    p.add_argument("--exporter", choices=["auto", "dynamo", "torchscript"], default=_D.exporter,
                   help="exporter used when no --onnx is given (default auto: dynamo, then TorchScript "
                        "if dynamo fails, with a note; a named exporter is used strictly)")
    p.add_argument("--provider", default=_D.provider, metavar="NAME",
                   help=f"ONNX Runtime execution provider (default {_D.provider})")
    p.add_argument("--max-memory", type=_memory_size, default=_D.max_memory, metavar="SIZE",
                   help="peak memory of the whole run, e.g. 3G: what the weights and sessions leave of "
                        "it bounds one sample's captured intermediates, over which layers are compared in "
                        "windows (default: 80%% of the memory available at start)")
    p.add_argument("--batch", type=int, default=_D.batch, metavar="N",
                   help="compare N samples per ORT run and torch forward, concatenated along dim 0, when "
                        "the graph's batch dim is dynamic (default 1: one sample at a time)")
    _add_capture_options(p)
    _add_served_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    _add_trust_option(p)


def _add_served_options(p: argparse.ArgumentParser) -> None:
    """The served model (docs/triton.md)."""
    g = p.add_argument_group("served model (Triton; docs/triton.md)")
    g.add_argument("--triton-repo", metavar="REPO", dest="triton_repo",
                   help="a Triton model repository: the file it serves for --model, run with the ONNX Runtime "
                        "settings its config.pbtxt gives (graph level, threads, execution mode, arena, pattern) "
                        "and inputs from the config's names, types and dims")
    g.add_argument("--triton-url", metavar="URL", dest="triton_url",
                   help="a live Triton server (http://HOST:PORT or grpc://HOST:PORT): the samples are sent one "
                        "at a time and concurrently, its answers compared with torch and the local file")
    g.add_argument("--model", metavar="NAME", dest="triton_model", help="the model's name in the repository / server")
    g.add_argument("--version", type=int, metavar="V", dest="triton_version",
                   help="the model version (default: the highest version served)")
    g.add_argument("--batch-sweep", metavar="SIZES", dest="batch_sweep",
                   help="run the samples alone and batched at each size (e.g. 1,4,8) and name the first layer "
                        "whose output depends on the batch")


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
    p.add_argument("--layer-samples", default=_D.layer_samples, metavar="auto|all|K",
                   help="samples compared layer by layer: auto (= 3) = sample 0 and the 2 samples with the "
                        "largest output error; K = sample 0 and the K-1 worst; all = every sample (the output "
                        "verdict covers every sample either way)")
    p.add_argument("--output-opt-level", choices=list(OPT_LEVELS), default=_D.output_opt_level,
                   help="ORT optimisation level of the output pass that gives the verdict on every sample "
                        "(default all, ORT's own default: what you deploy); --opt-level sets the per-layer pass")


def _memory_size(text: str) -> int:
    from drifttui.core.base.units import parse_size
    from drifttui.errors import InputError

    try:
        return parse_size(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.args[0] if exc.args else str(exc)) from exc


def _tolerance(text: str):
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or auto") from None


def config_from_args(args: argparse.Namespace):
    from drifttui.core.result import Config

    if args.example and args.model:
        raise DriftTuiError("give either MODEL or --example, not both", "drop one of them")
    if not args.example and not args.model:
        raise DriftTuiError("no model given", "pass MODEL (file.py:fn, a TorchScript file or a .pt2) or --example NAME")
    atol, rtol = _D.atol, _D.rtol
    if args.tolerance is not None and args.tolerance != "auto":
        atol = rtol = args.tolerance
    if args.atol is not None:
        atol = args.atol
    if args.rtol is not None:
        rtol = args.rtol
    if args.example:
        from drifttui.core.model.examples import get_example

        get_example(args.example)
    model = f"example:{args.example}" if args.example else args.model
    ref = getattr(args, "reference_onnx", None)
    if ref and not args.onnx:
        raise DriftTuiError("--reference-onnx needs --onnx", "pass the deployed file with --onnx FILE")
    served = _served_fields(args)
    for flag, path in (("--onnx", args.onnx), ("--reference-onnx", ref)):
        # said before torch loads (seconds), as the loader says it; a served run checks its URL first
        if path and not os.path.isfile(path) and not (served["triton_url"] or served["triton_repo"]):
            from drifttui.errors import InputError

            raise InputError(f"ONNX file {str(path)!r} does not exist", f"check the {flag} path")
    return Config(**served, model=model, onnx=args.onnx, reference_onnx=ref, inputs=args.inputs, example=args.example,
                  samples=args.samples, seed=args.seed, atol=atol, rtol=rtol, opt_level=args.opt_level,
                  deterministic=args.deterministic, exporter=args.exporter, provider=args.provider,
                  max_memory=getattr(args, "max_memory", _D.max_memory), batch=getattr(args, "batch", _D.batch),
                  trust_model_file=getattr(args, "trust_model_file", _D.trust_model_file),
                  layer_samples=getattr(args, "layer_samples", _D.layer_samples),
                  output_opt_level=getattr(args, "output_opt_level", _D.output_opt_level))


def no_served_options(config, command: str) -> None:
    """``repro`` / ``repair`` do not run the served comparison yet: refused, never ignored."""
    if config.triton_repo or config.triton_url or config.batch_sweep:
        raise DriftTuiError(f"`drifttui {command}` does not take --triton-repo, --triton-url or --batch-sweep yet",
                            "use `drifttui check` or `drifttui diagnose` for the served model (docs/triton.md)")


def _served_fields(args: argparse.Namespace) -> dict:
    repo, url, name = (getattr(args, k, None) for k in ("triton_repo", "triton_url", "triton_model"))
    sweep = getattr(args, "batch_sweep", None)
    if (repo or url) and not name:
        raise DriftTuiError("--triton-repo / --triton-url need --model NAME", "name the served model")
    if name and not (repo or url):
        raise DriftTuiError("--model names a served model, but no --triton-repo or --triton-url is given",
                            "add --triton-repo REPO or --triton-url URL")
    if getattr(args, "triton_version", None) is not None and args.triton_version < 1:
        raise DriftTuiError(f"--version {args.triton_version} is not a model version", "versions are 1 or more")
    sizes: tuple = ()
    if sweep:
        from drifttui.core.compose.batch_sweep import parse_sizes

        sizes = parse_sizes(sweep)
    return {"triton_repo": repo, "triton_url": url, "triton_model": name,
            "triton_version": getattr(args, "triton_version", None), "batch_sweep": sizes}


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
    files.extend(_repository_files(config))
    for onnx_file in (config.onnx, getattr(config, "reference_onnx", None)):
        if onnx_file:
            files.append(onnx_file)
            files.extend(_external_data_files(onnx_file))
    return files


def _repository_files(config) -> list[str]:
    """Every file of the served model's folder in a --triton-repo (config, versions, data)."""
    repo, name = getattr(config, "triton_repo", None), getattr(config, "triton_model", None)
    if not repo or not name or not os.path.isdir(os.path.join(repo, name)):
        return []
    out = []
    for folder, _, names in os.walk(os.path.join(repo, name)):
        out.extend(os.path.join(folder, n) for n in names)
        if len(out) > 10_000:
            break
    return out


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


def process_age() -> "float | None":
    """Seconds since this process started (Linux: /proc), or None where that is not known: the
    interpreter's start and the imports before a run, which no stage of the engine times."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def _progress_printer(enabled: bool = True):
    """The progress printer on stderr (drifttui/cli_progress.py): live in a terminal, one line per
    stage with the elapsed time in a log."""
    from drifttui.cli_progress import ProgressPrinter

    return ProgressPrinter(enabled)
