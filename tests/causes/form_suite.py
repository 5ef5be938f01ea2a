"""What the upstream form suites (test_forms32.py, test_forms33.py) share: a module-scoped cache of
exported and explained forms, their parametrisation (fast forms in ``make test``, the rest behind the
``drifts`` marker), and the judge's assertions: the origin, the cause's class by mechanism, ``verified``,
and ``repair``'s file passing ``check``; for the forms nothing verifies, what the engine says of them."""
from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

HERE = Path(__file__).parent


def explained_forms(tmp_path_factory: Any, name: str, inputs: Optional[dict] = None,
                    opset: Optional[dict] = None, export: Optional[Callable[[str, str], dict]] = None,
                    examples: Optional[dict] = None, seed: int = 0) -> Callable[[str, str], Any]:
    """(model, exporter) -> explained_run of ``tests/causes/<name>.py``'s model exported by that exporter
    (its inputs function ``inputs.get(model, "rows_inputs")``, at ``opset[model]`` if given, with
    ``export(model, exporter)``'s further arguments of ``torch.onnx.export``: dynamic dims; exported on the inputs
    of ``examples[model]`` when given: a file exported at one size and run at others; its samples drawn at ``seed``:
    a batch whose first run was measured at the CLI's ``--seed 7``), cached."""
    import torch

    from drifttui.core.result import Config
    from tests.causes.conftest import explained_run

    forms = importlib.import_module(f"tests.causes.{name}")
    spec, root = f"{HERE / (name + '.py')}", tmp_path_factory.mktemp(name)
    inputs, opset, examples = inputs or {}, opset or {}, examples or {}
    cache: dict[tuple, Any] = {}

    def go(model: str, exporter: str) -> Any:
        key = (model, exporter)
        if key not in cache:
            path = root / f"{model}-{exporter}.onnx"
            fn = inputs.get(model, "rows_inputs")
            torch.manual_seed(0)
            module = getattr(forms, model)()
            made = getattr(forms, examples.get(model, fn))()     # a tuple of tensors: the model's positional inputs
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(module, made if isinstance(made, tuple) else (made,), str(path),
                                  dynamo=exporter == "dynamo",
                                  **({"opset_version": opset[model]} if model in opset else {}),
                                  **(export(model, exporter) if export is not None else {}))
            cache[key] = explained_run(Config(model=f"{spec}:{model}", onnx=str(path), inputs=f"{spec}:{fn}",
                                              samples=3, seed=seed))
        return cache[key]

    return go


def explained_file_form(tmp_path: Any, spec_file: str, form: str, dynamo: bool, spec: dict,
                        inputs: str = "rows", samples: int = 2) -> tuple:
    """explained_run of the model ``spec[form]()`` (a function of ``spec_file``'s, its globals ``spec``) exported by
    one exporter on ``spec[inputs]()`` (the fuzz-find suites' small models)."""
    import torch

    from drifttui.core.result import Config
    from tests.causes.conftest import explained_run

    path = tmp_path / f"{form}-{dynamo}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(spec[form](), (spec[inputs](),), str(path), dynamo=dynamo)
    return explained_run(Config(model=f"{spec_file}:{form}", onnx=str(path), inputs=f"{spec_file}:{inputs}",
                                samples=samples))


def params(forms: Any, fast: set) -> list[Any]:
    return [pytest.param(f, id=f"{f[0]}-{f[1]}", marks=() if f in fast else pytest.mark.drifts) for f in forms]


def missed(forms: Any, reason: str) -> list[Any]:
    """A first run's misses, each the test of the right behaviour as a strict xfail behind ``drifts``: the miss is on
    record, and a change that fixes it must lift the mark."""
    return [pytest.param(f, id=f"{f[0]}-{f[1]}", marks=(pytest.mark.drifts, pytest.mark.xfail(strict=True, reason=reason)))
            for f in forms]


def assert_verified_and_repaired(explained: Callable, form: tuple, expected: tuple, origin: str) -> None:
    """The origin, the head finding's class, patch and words, verified; repair's file checks ok."""
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, exp = _head_verified(explained, form, expected, origin)
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None, fixed.not_applicable
    assert engine.recheck(cfg, fixed.model).verdict == "ok"


def assert_verified_to_torch_precision(explained: Callable, form: tuple, expected: tuple, origin: str) -> None:
    """Two mechanisms stacked at an ill-conditioned origin (propose/numerics/torch_rounding.py): the head finding's
    patch is verified to the precision torch's own float32 has, said so, and repair's file is at least ten times
    closer to torch at the output; ``check`` still flags what torch's own rounding leaves, as it should."""
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, exp = _head_verified(explained, form, expected, origin)
    assert "torch's own float32 rounding" in exp.findings[0].message, exp.findings[0].message
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None, fixed.not_applicable
    before = max(o.metrics.max_abs.worst for o in run.result.outputs)
    after = max(o.metrics.max_abs.worst for o in engine.recheck(cfg, fixed.model).outputs)
    assert after * 10 <= before, (before, after)


def assert_verified_not_repairable(explained: Callable, form: tuple, expected: tuple, origin: str) -> None:
    """A form no file can repair (torch's own float32 rounding is the drift): the origin, the class, the
    counterfactual verified, and ``repair`` saying it has nothing to apply rather than writing a file."""
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.onnx.graph import full_model

    _, _, run, exp = _head_verified(explained, form, expected, origin)
    fixed, what, fix = repair_patches(full_model(run.prepared.index), run.result, exp)
    assert fixed.model is None
    # said as what verified (not "a verified re-export"), with the head's fix
    assert (what, fix) == (f"only a {expected[1]} counterfactual verified (not a graph edit)", exp.findings[0].fix)


def assert_said_unverified(explained: Callable, form: tuple, expected: tuple, origin: str) -> None:
    """A form nothing verifies: its origin and mechanism, and that no patch verified, said so."""
    cls, words = expected
    _, _, _, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == origin
    head = next(f for f in exp.findings if f.severity == "error")
    assert (head.check, head.verified) == (cls, False), (head.check, head.message)
    assert words in head.message and "no patch among" in head.message, head.message


def assert_ties_unrepairable(explained: Callable, form: tuple, origin: str = "body") -> None:
    """A tie order the file breaks otherwise than torch (TopK, argmax among tied values): the origin, ``op-compat``
    unverified, the ties named and said to have no patch, and ``repair`` writing no file."""
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.onnx.graph import full_model

    _, _, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == origin
    head = next(f for f in exp.findings if f.severity == "error")
    assert (head.check, head.verified) == ("op-compat", False), (head.check, head.message)
    assert "tied values" in head.message and "no patch exists" in head.message, head.message
    assert repair_patches(full_model(run.prepared.index), run.result, exp)[0].model is None


def assert_clean(explained: Callable, form: tuple) -> None:
    _, _, _, result, exp = explained(*form)
    assert result.verdict == "ok" and [f for f in exp.findings if f.severity == "error"] == []


def deep_forms(explained: Callable, forms: list) -> list:
    """The forms inside a deep model (17 module calls or more)."""
    return [f for f in forms if len(explained(*f)[2].prepared.calls) >= 17]


def _head_verified(explained: Callable, form: tuple, expected: tuple, origin: str) -> tuple:
    """The form's run (engine, config, run, explanation) after asserting its origin and its head finding:
    the class, verified, an error, the patch's op and what it changed, and the words of its message."""
    cls, op, changed, words = expected
    engine, cfg, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == origin
    head = exp.findings[0]
    assert (head.check, head.verified, head.severity) == (cls, True, "error"), (head.check, head.message)
    assert head.patch["op"] == op and all(head.patch.get(k) == v for k, v in changed.items()), head.patch
    assert words in head.message, head.message
    return engine, cfg, run, exp


def cli_repair_passes_check(tmp_path: Any, spec_file: str, form: str, onnx: str, inputs: str = "rows",
                            samples: int = 2) -> bool:
    """``drifttui repair`` of the file ``onnx`` for ``spec_file:form`` writes a copy that ``drifttui check`` passes
    (both through the CLI, on ``spec_file:inputs``)."""
    from drifttui.cli import main

    fixed = tmp_path / "fixed.onnx"
    common = [f"{spec_file}:{form}", "--inputs", f"{spec_file}:{inputs}", "--samples", str(samples)]
    return main(["repair", *common, "--onnx", onnx, "--out", str(fixed)]) == 0 and \
        main(["check", *common, "--onnx", str(fixed)]) == 0


def stem_net(body: Callable[[], Any]) -> Any:
    """The fuzz finds' model: a Linear stem, ``* 3.0``, then ``body()`` (named ``stem`` and ``body``; made in that
    order, so a seed gives the weights it always gave), in eval."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem, self.body = nn.Linear(32, 32), body()

        def forward(self, x: Any) -> Any:
            return self.body(self.stem(x) * 3.0)

    return Net().eval()
