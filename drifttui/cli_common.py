"""What every drifttui command shares: the help texts, the run options, the Config they make,
the run's input files (no output may name one) and the progress printer."""
from __future__ import annotations

import argparse
import os

from drifttui.core.result import OPT_LEVELS
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

TOLERANCE_HELP = """tolerance rule:
  an element passes when |torch - onnx| <= atol + rtol * scale, where scale is the largest |torch|
  value of that layer's output in that sample (relative to the layer's scale). A layer drifts when
  any element fails in any sample. Defaults atol=1e-4, rtol=1e-4 pass float32 noise between
  PyTorch and ONNX Runtime on real models (~1e-6 relative per layer).
  float16 / bfloat16 values: rtol_eff = max(rtol, 4 * eps), eps = 2^-10 (float16), 2^-7 (bfloat16).
  The report prints this rule in one line (`rule: ...`); docs/cli.md "Tolerance" has the details.
"""

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
    p.add_argument("--samples", type=int, default=100, metavar="N", help="samples to compare (default 100)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="sample i is drawn with seed S+i (default 0)")
    p.add_argument("--atol", type=float, default=None, metavar="A", help="absolute tolerance (default 1e-4)")
    p.add_argument("--rtol", type=float, default=None, metavar="R",
                   help="tolerance relative to the layer's scale (default 1e-4)")
    p.add_argument("--tolerance", type=float, default=None, metavar="T", help="shorthand: atol = rtol = T")
    p.add_argument("--opt-level", choices=list(OPT_LEVELS), default="disable",
                   help="ONNX Runtime graph optimisation level (default disable: fusions would hide values)")
    p.add_argument("--deterministic", action="store_true",
                   help="deterministic torch algorithms; ORT single-threaded without memory arena")
    p.add_argument("--exporter", choices=["auto", "dynamo", "torchscript"], default="auto",
                   help="exporter used when no --onnx is given (default auto: dynamo, then TorchScript "
                        "if dynamo fails, with a note; a named exporter is used strictly)")
    p.add_argument("--provider", default="CPUExecutionProvider", metavar="NAME",
                   help="ONNX Runtime execution provider (default CPUExecutionProvider)")
    p.add_argument("--max-memory", type=_memory_size, default=None, metavar="SIZE",
                   help="peak memory of the whole run, e.g. 3G: what the weights and sessions leave of "
                        "it bounds one sample's captured intermediates, over which layers are compared in "
                        "windows (default: 80%% of the memory available at start)")
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
    p.add_argument("--layer-samples", default="auto", metavar="auto|all|K",
                   help="samples compared layer by layer: auto (= 3) = sample 0 and the 2 samples with the "
                        "largest output error; K = sample 0 and the K-1 worst; all = every sample (the output "
                        "verdict covers every sample either way)")
    p.add_argument("--output-opt-level", choices=list(OPT_LEVELS), default="all",
                   help="ORT optimisation level of the output pass that gives the verdict on every sample "
                        "(default all, ORT's own default: what you deploy); --opt-level sets the per-layer pass")


def _memory_size(text: str) -> int:
    from drifttui.core.model.units import parse_size
    from drifttui.errors import InputError

    try:
        return parse_size(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.args[0] if exc.args else str(exc)) from exc


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
    ref = getattr(args, "reference_onnx", None)
    if ref and not args.onnx:
        raise DriftTuiError("--reference-onnx needs --onnx", "pass the deployed file with --onnx FILE")
    return Config(model=model, onnx=args.onnx, reference_onnx=ref, inputs=args.inputs, example=args.example,
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
    for onnx_file in (config.onnx, getattr(config, "reference_onnx", None)):
        if onnx_file:
            files.append(onnx_file)
            files.extend(_external_data_files(onnx_file))
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
