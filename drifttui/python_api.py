"""The Python API: ``drifttui.check``, ``drifttui.diagnose``, ``drifttui.assert_no_drift``.

Thin over the engine: arguments become a :class:`Config`; an in-memory model, ModelProto and
samples are handed to the engine through ``core/model/memory.py`` (a model becomes a
``python-object:`` token) and a temporary ONNX file, all released when the call returns.
Only :func:`_run_engine` knows how the engine is driven. Nothing is printed. See docs/python-api.md.
"""
from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence, Union

from drifttui.report.outputs import write_model
from drifttui.core.base.progress import CancelToken, ProgressFn, no_progress
from drifttui.core.result import Config, Result
from drifttui.errors import DriftTuiError, InputError, environment_failure

if TYPE_CHECKING:   # pragma: no cover
    import onnx
    import torch

    ModelArg = Union[torch.nn.Module, str]
    OnnxArg = Union[str, Path, onnx.ModelProto, None]
else:
    ModelArg = Any
    OnnxArg = Any

#: one sample (tensor, tuple of positional tensors, dict of named tensors), a callable
#: ``(i) -> sample``, an iterable of samples (a DataLoader's batches), or a CLI --inputs spec string
InputsArg = Any
#: what to add to a finished run: None, "checks" (the findings) or "diagnose" (steps + findings)
Explain = Callable[[Result], Optional[str]]

__all__ = ["check", "diagnose", "assert_no_drift"]

#: ``Result.config.onnx`` when ``onnx=`` was an in-memory ModelProto
PROTO_LABEL = "<onnx.ModelProto>"


#: the run defaults, from the one place they are written: the engine's Config
_D = {f.name: f.default for f in dataclasses.fields(Config)}


@dataclass(frozen=True)
class _Options:
    samples: int = _D["samples"]
    atol: float = _D["atol"]
    rtol: float = _D["rtol"]
    seed: int = _D["seed"]
    opt_level: str = _D["opt_level"]
    deterministic: bool = _D["deterministic"]
    exporter: str = _D["exporter"]
    provider: str = _D["provider"]
    max_memory: Optional[int] = _D["max_memory"]
    batch: int = _D["batch"]
    # the served model (docs/triton.md)
    triton_repo: Optional[str] = None
    triton_url: Optional[str] = None
    triton_model: Optional[str] = None
    triton_version: Optional[int] = None
    batch_sweep: tuple = ()


def check(model: ModelArg, onnx: OnnxArg = None, inputs: InputsArg = None, *, samples: int = _D["samples"],
          atol: float = _D["atol"], rtol: float = _D["rtol"], seed: int = _D["seed"], opt_level: str = _D["opt_level"],
          deterministic: bool = _D["deterministic"], exporter: str = _D["exporter"], provider: str = _D["provider"],
          max_memory: Optional[int] = _D["max_memory"], batch: int = _D["batch"], progress: Optional[ProgressFn] = None,
          cancel: Optional[CancelToken] = None, triton_repo: Optional[str] = None, triton_url: Optional[str] = None,
          triton_model: Optional[str] = None, triton_version: Optional[int] = None,
          batch_sweep: Sequence[int] = ()) -> Result:
    """Compare ``model`` with its ONNX export layer by layer; return the :class:`Result`.

    ``model``: an ``nn.Module`` (put in eval mode for the run, its modes restored after) or a
    CLI MODEL spec (``file.py:fn``, TorchScript, ``.pt2``, ``example:NAME``). ``onnx``: a path,
    an ``onnx.ModelProto``, or None to export the model. Raises ``drifttui.InputError`` /
    ``drifttui.ModelError`` (one-line messages) on bad input or a failing model/runtime.
    ``triton_repo`` / ``triton_url`` with ``triton_model`` (and ``triton_version``): the served model,
    ``batch_sweep``: batch sizes to check batch invariance at (docs/triton.md); ``result.served`` and
    ``result.batch_sweep`` carry them.
    """
    opts = _Options(samples, atol, rtol, seed, opt_level, deterministic, exporter, provider, max_memory, batch,
                    triton_repo, triton_url, triton_model, triton_version, tuple(sorted(set(batch_sweep))))
    return _call(model, onnx, inputs, opts, progress, cancel, explain=lambda r: None)


def diagnose(model: ModelArg, onnx: OnnxArg = None, inputs: InputsArg = None, *, step: Optional[int] = None,
             samples: int = _D["samples"], atol: float = _D["atol"], rtol: float = _D["rtol"], seed: int = _D["seed"],
             opt_level: str = _D["opt_level"], deterministic: bool = _D["deterministic"], exporter: str = _D["exporter"],
             provider: str = _D["provider"], max_memory: Optional[int] = _D["max_memory"], batch: int = _D["batch"],
             progress: Optional[ProgressFn] = None, cancel: Optional[CancelToken] = None) -> Result:
    """:func:`check`, then the six debugging steps (or only ``step``) and the drift checks:
    the result carries ``steps`` and ranked ``findings`` (``result.headline`` is the cause)."""
    opts = _Options(samples, atol, rtol, seed, opt_level, deterministic, exporter, provider, max_memory, batch)
    return _call(model, onnx, inputs, opts, progress, cancel, explain=lambda r: "diagnose", step=step)


def assert_no_drift(model: ModelArg, onnx: OnnxArg = None, inputs: InputsArg = None, *,
                    fail_on: str = "drift", min_top1: Optional[float] = None,
                    baseline: Union[Result, str, Path, None] = None, **options: Any) -> Result:
    """:func:`check`, and raise ``AssertionError`` when the CI gate fails (docs/ci.md): the
    message names the origin, its errors and the headline cause (the drift checks run when the
    gate fails, or always with ``fail_on="error"``; the six steps do not).
    ``options`` are :func:`check`'s keyword arguments. Returns the result when the gate passes."""
    from drifttui.report.gate import Gate, decide

    gate = Gate(fail_on, min_top1, _baseline(baseline))
    # the drift checks give the findings (fail_on="error") and the cause for the message
    explain: Explain = lambda r: "checks" if fail_on == "error" or not decide(r, gate).passed else None
    progress, cancel = options.pop("progress", None), options.pop("cancel", None)
    unknown = set(options) - set(_Options.__dataclass_fields__)
    if unknown:
        raise TypeError(f"assert_no_drift() got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    result = _call(model, onnx, inputs, _Options(**options), progress, cancel, explain=explain)
    decision = decide(result, gate)
    if not decision.passed:
        from drifttui.report.summary import assertion_message

        raise AssertionError(assertion_message(result, decision))
    return result


# ----------------------------------------------------------------------------------------------
def _run_engine(config: Config, progress: ProgressFn, cancel: Optional[CancelToken],
                explain: "Explain", step: Optional[int] = None) -> Result:
    """The one place the Python API drives the engine: the session run, then, as ``explain``
    says for that result, nothing, the drift checks (findings), or the steps and the checks."""
    from drifttui.core.explain import STEP_NUMBERS
    from drifttui.core.pipeline import Pipeline

    from drifttui.core.compose import served

    engine = Pipeline()
    try:
        result = served.run(engine, config, progress, cancel) if served.wanted(config) else \
            engine.run(config, progress, cancel).result
        how = explain(result)
        if how == "diagnose":
            steps = [step] if step else list(STEP_NUMBERS)
            result = engine.explain(result, steps, progress, cancel).result
        elif how == "checks":
            result = engine.explain(result, (), progress, cancel).result
    finally:        # cancelled or not: no temporary folder outlives the call
        engine.close()
    return result


def _call(model: ModelArg, onnx: OnnxArg, inputs: InputsArg, opts: _Options, progress: Optional[ProgressFn],
          cancel: Optional[CancelToken], explain: "Explain", step: Optional[int] = None) -> Result:
    from drifttui.core.model import memory

    if step is not None and step not in range(1, 7):
        raise InputError(f"step={step!r} is not a debugging step", "use 1 to 6, or None for all six")
    from drifttui.core.run_options import KIND_FIX, kind_problem

    problem = kind_problem(opts.samples, opts.seed, opts.batch, opts.atol, opts.rtol)
    if problem:
        raise InputError(problem, KIND_FIX)
    tokens: list[str] = []
    with _eval_mode(model), tempfile.TemporaryDirectory(prefix="drifttui-api-") as tmp:
        try:
            model_spec, example = _model_spec(model, tokens, onnx is not None)
            onnx_path = _onnx_path(onnx, Path(tmp))
            inputs_spec, samples = _inputs_spec(inputs, opts.samples, tokens)
            if inputs_spec is None and onnx_path is None and example is None and not opts.triton_repo:
                raise InputError("inputs= is needed when drifttui exports an in-memory model",
                                 "pass inputs=example_tensor (or a tuple/dict of tensors, or a callable)")
            cfg = Config(model=model_spec, onnx=onnx_path, inputs=inputs_spec, example=example,
                         samples=samples, seed=opts.seed, atol=opts.atol, rtol=opts.rtol,
                         opt_level=opts.opt_level, deterministic=opts.deterministic, exporter=opts.exporter,
                         provider=opts.provider, max_memory=opts.max_memory, batch=opts.batch,
                         triton_repo=opts.triton_repo, triton_url=opts.triton_url, triton_model=opts.triton_model,
                         triton_version=opts.triton_version, batch_sweep=opts.batch_sweep)
            try:
                result = _run_engine(cfg, progress or no_progress, cancel, explain, step)
            except Exception as exc:     # a full disk, a file-size limit: an InputError, as the CLI says it
                refused = environment_failure(exc) if not isinstance(exc, DriftTuiError) else None
                if refused is None:
                    raise
                raise refused from exc
        finally:
            memory.unregister(*tokens)
    if onnx is not None and not isinstance(onnx, (str, Path)):     # the temporary file is gone
        result = result.with_(config=dataclasses.replace(result.config, onnx=PROTO_LABEL))
    if samples < opts.samples and not (isinstance(inputs, str) or inputs is None):
        result = result.with_(notes=list(result.notes) + [
            f"inputs= gave {samples} sample(s) where samples={opts.samples} was asked: pass a callable "
            "(i) -> sample or a longer list to compare more"])
    return result


def _baseline(baseline: Union[Result, str, Path, None]) -> Optional[Result]:
    """A baseline Result, or one read from an earlier JSON report."""
    if baseline is None or isinstance(baseline, Result):
        return baseline
    from drifttui.report.ci_outputs import _read_baseline

    return _read_baseline(str(baseline))


def _model_spec(model: ModelArg, tokens: list[str], onnx_given: bool) -> tuple[str, Optional[str]]:
    from drifttui.core.model import memory

    if isinstance(model, (str, Path)):
        text = str(model)
        if text.startswith("example:"):
            from drifttui.core.model.examples import get_example

            get_example(text.split(":", 1)[1])
            return text, text.split(":", 1)[1]
        return text, None
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        if not onnx_given:
            raise InputError("an ExportedProgram cannot be re-exported from its unflattened module",
                             "pass onnx= (the file exported from it), or the nn.Module itself")
        try:       # as the CLI loads a .pt2: unflattened, so per-module hooks still work
            model = torch.export.unflatten(model)
        except Exception:   # noqa: BLE001 - fall back to the flat module (outputs compared only)
            model = model.module()
    if isinstance(model, type):
        raise InputError(f"model= is the class {model.__name__}, not a model",
                         f"pass an instance: model={model.__name__}(...) with its weights loaded")
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"model= is a {type(model).__name__}",
                         "pass a torch.nn.Module, or a MODEL spec string like 'file.py:build'")
    token = memory.register_model(model)
    tokens.append(token)
    return token, None


def _onnx_path(onnx_arg: OnnxArg, tmp: Path) -> Optional[str]:
    if onnx_arg is None or isinstance(onnx_arg, (str, Path)):
        return None if onnx_arg is None else str(onnx_arg)
    import onnx

    if not isinstance(onnx_arg, onnx.ModelProto):
        raise InputError(f"onnx= is a {type(onnx_arg).__name__}", "pass a path, an onnx.ModelProto or None")
    path = tmp / "model.onnx"
    write_model(str(path), onnx_arg, "onnx=")
    return str(path)


def _inputs_spec(inputs: InputsArg, samples: int, tokens: list[str]) -> tuple[Optional[str], int]:
    from drifttui.core.model import memory

    if inputs is None or isinstance(inputs, str):
        return inputs, samples
    if samples < 1:
        raise InputError(f"samples={samples} is not a positive number", "use samples=1 or more")
    token, count = memory.register_samples(inputs, samples)
    tokens.append(token)
    return token, count


@contextlib.contextmanager
def _eval_mode(model: Any) -> Iterator[None]:
    """Run in eval mode (dropout off, BatchNorm statistics frozen); restore every module's mode."""
    is_model = hasattr(model, "modules") and hasattr(model, "eval") and not isinstance(model, type)  # a class: refused later
    modes = [(m, m.training) for m in model.modules()] if is_model else []
    if modes:
        model.eval()
    try:
        yield
    finally:
        for m, training in modes:
            with contextlib.suppress(Exception):    # ScriptModules may refuse the attribute
                m.training = training
