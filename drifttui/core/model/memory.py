"""In-memory models and samples for the Python API: the engine's loader hook.

The engine reads a model and its inputs from the spec strings of a :class:`Config`
(``Config.model``, ``Config.inputs``). The Python API registers an ``nn.Module`` object and
its samples here and puts the returned token (``python-object:Net#3``) in those fields; the
loaders (``loading.load_torch_model``, ``inputs.build_source``) resolve a token here. A token
survives ``dataclasses.replace`` on the config, so the debugging steps' reruns find the same
objects. ``python-object`` is not a valid module name, so no CLI spec can collide with a token.
The caller unregisters its tokens when its call ends.  This module only keeps the objects:
``inputs.build_source`` makes the seeded, checked input source of a samples token.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Optional

import numpy as np
import torch

from drifttui.errors import InputError, folded

PREFIX = "python-object:"

_MODELS: dict[str, Any] = {}
_SAMPLES: dict[str, tuple[Callable[[int], Any], bool, str]] = {}
_COUNTS: dict[str, int] = {}     # a listed inputs= token -> how many samples it holds
_COUNTER = itertools.count(1)


def is_token(text: Optional[str]) -> bool:
    return bool(text) and str(text).startswith(PREFIX)


def register_model(model: Any) -> str:
    token = f"{PREFIX}{type(model).__name__}#{next(_COUNTER)}"
    _MODELS[token] = model
    return token


def register_samples(inputs: Any, samples: int) -> tuple[str, int]:
    """Register the API's ``inputs=`` (one sample, a callable ``(i) -> sample`` or an
    iterable of samples); return the token and how many samples it can give (<= ``samples``)."""
    if callable(inputs) and not isinstance(inputs, torch.Tensor):
        fn = inputs

        def make(i: int) -> Any:      # seeded by inputs.build_source, like the CLI's callables
            try:
                return fn(i)
            except Exception as exc:
                raise InputError(f"inputs callable raised {type(exc).__name__}: {folded(exc)} on sample {i}",
                                 "fix the callable: it takes the sample index and returns a tensor, "
                                 "a tuple of tensors or a dict of tensors") from exc

        return _add(make, False, f"callable {getattr(fn, '__name__', type(fn).__name__)}(i)"), samples
    if _is_one_sample(inputs):
        return _add(lambda i: inputs, True, "one sample"), 1
    if not isinstance(inputs, Iterable):
        raise InputError(f"inputs= is a {type(inputs).__name__}",
                         "pass a tensor, a tuple or dict of tensors, a callable (i) -> sample, or a list of samples")
    items = _draw(inputs, samples)       # DataLoader batches: drawn once, in order
    if not items:
        raise InputError("inputs= gave no samples", "pass a non-empty list or iterable of samples")
    token = _add(lambda i: items[i], len(items) == 1, f"{len(items)} listed sample(s)")
    _COUNTS[token] = len(items)
    return token, len(items)


def _draw(inputs: Iterable, samples: int) -> list[Any]:
    """The first ``samples`` items of ``inputs``; an iterable that raises is an InputError naming the
    sample it was drawing (its own exception as the cause)."""
    items: list[Any] = []
    try:
        for item in itertools.islice(iter(inputs), samples):
            items.append(item)
    except Exception as exc:
        raise InputError(f"inputs= raised {type(exc).__name__}: {folded(exc)} on sample {len(items)} "
                         f"(while drawing it)", "fix the iterable, or pass a list of samples or a callable "
                         "(i) -> sample") from exc
    return items


def _is_one_sample(value: Any) -> bool:
    return isinstance(value, (torch.Tensor, np.ndarray, dict, tuple))


def _add(make: Callable[[int], Any], fixed: bool, description: str) -> str:
    token = f"{PREFIX}inputs#{next(_COUNTER)}"
    _SAMPLES[token] = (make, fixed, description)
    return token


def unregister(*tokens: Optional[str]) -> None:
    for token in tokens:
        if token:
            _MODELS.pop(token, None)
            _SAMPLES.pop(token, None)
            _COUNTS.pop(token, None)


def _gone(token: str) -> InputError:
    return InputError(f"{token} belonged to a finished Python API call and is no longer available",
                      "call drifttui.check/diagnose again with the object")


def model(token: str) -> Any:
    if token not in _MODELS:
        raise _gone(token)
    return _MODELS[token]


def sample_count(token: str) -> Optional[int]:
    """How many samples a listed ``inputs=`` holds (None: a callable or one sample, any index)."""
    return _COUNTS.get(token)


def samples(token: str) -> tuple[Callable[[int], Any], bool, str]:
    """(make sample i, fixed, description) of a samples token."""
    if token not in _SAMPLES:
        raise _gone(token)
    return _SAMPLES[token]
