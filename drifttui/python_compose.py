"""The Python API of the compositions: ``drifttui.bisect`` (which stage of a deployment pipeline
drifts, and which pass) and ``drifttui.tolerance`` (the tolerance from the measured noise floor).
Arguments as ``drifttui.check`` takes them (python_api.py); nothing is printed.  See docs/bisect.md."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union

from drifttui.core.base.progress import CancelToken, ProgressFn, no_progress
from drifttui.core.result import Config
from drifttui.python_api import _D, InputsArg, ModelArg, _eval_mode, _inputs_spec, _model_spec


@contextlib.contextmanager
def _config(model: ModelArg, inputs: InputsArg, samples: int, onnx_given: bool, **kw: Any) -> Iterator[Config]:
    from drifttui.core.model import memory

    tokens: list[str] = []
    with _eval_mode(model):
        try:
            spec, example = _model_spec(model, tokens, onnx_given)
            ins, n = _inputs_spec(inputs, samples, tokens)
            yield Config(model=spec, inputs=ins, example=example, samples=n, **kw)
        finally:
            memory.unregister(*tokens)


def bisect(model: ModelArg, stages: Sequence[Union[str, Path]], inputs: InputsArg = None, *,
           samples: int = _D["samples"], atol: float = _D["atol"], rtol: float = _D["rtol"], seed: int = _D["seed"],
           exporter: str = _D["exporter"], output_opt_level: str = _D["output_opt_level"], explain: bool = True,
           progress: Optional[ProgressFn] = None, cancel: Optional[CancelToken] = None) -> Any:
    """Torch against every file of ``stages`` (the raw export first), each file against the one
    before; returns a ``StageBisect`` (``.first``, ``.summary``, ``.passes``, ``.sim``, ``.to_dict()``)."""
    from drifttui.core.compose.stage_bisect import bisect_stages

    with _config(model, inputs, samples, True, seed=seed, atol=atol, rtol=rtol, exporter=exporter,
                 output_opt_level=output_opt_level) as cfg:
        return bisect_stages(cfg, [str(s) for s in stages], progress or no_progress, cancel, explain)


def tolerance(model: ModelArg, onnx: Optional[Union[str, Path]] = None, inputs: InputsArg = None, *,
              samples: int = _D["samples"], atol: float = _D["atol"], rtol: float = _D["rtol"],
              seed: int = _D["seed"], exporter: str = _D["exporter"], progress: Optional[ProgressFn] = None,
              cancel: Optional[CancelToken] = None) -> Any:
    """The model's noise floor and the advised tolerance: an ``Advice`` (``.atol``, ``.rtol``,
    ``.current``, ``.lines``); ``atol``/``rtol`` are the tolerance it is compared with."""
    from drifttui.core.compose.noise_floor import measure
    from drifttui.core.compose.tolerance_advice import advise

    with _config(model, inputs, samples, onnx is not None, seed=seed, atol=atol, rtol=rtol, exporter=exporter,
                 onnx=str(onnx) if onnx is not None else None) as cfg:
        return advise(measure(cfg, progress or no_progress, cancel))
