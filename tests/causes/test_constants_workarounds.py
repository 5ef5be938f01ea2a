"""Session 19's causes (issue 20) on the forms of tests/causes/forms20.py, exported by the real
exporters and run in real ONNX Runtime: a functional constant named and replaced, ONNX Runtime's
Tanh / Sigmoid worked around, a functional F.softplus's threshold read from the torch program, a
dropped eps said so, and a re-export grafted into a file whose opset the converter cannot reach
cleanly.  Each: the headline's class, verified, and ``repair`` -> ``check``.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

HERE = Path(__file__).parent
SPEC = f"{HERE / 'forms20.py'}"


def _edit_constant(path: Path, op: str, old: float, new: float) -> None:
    """The body's ``op`` reading the scalar ``old`` reads ``new`` instead (a stale/edited number)."""
    import onnx
    from onnx import numpy_helper

    from drifttui.core.onnx.edit.surgery import _in_scope

    proto = onnx.load(str(path))
    tensors = {t.name: t for t in proto.graph.initializer}
    tensors.update({n.output[0]: n.attribute[0].t for n in proto.graph.node if n.op_type == "Constant"})
    node, pos = next((n, k) for n in proto.graph.node if n.op_type == op and _in_scope(n, "body")
                     for k, v in enumerate(n.input) if v in tensors
                     and abs(float(numpy_helper.to_array(tensors[v]).ravel()[0]) - old) < 1e-6)
    arr = numpy_helper.to_array(tensors[node.input[pos]])
    proto.graph.initializer.append(numpy_helper.from_array(np.full(arr.shape, new, arr.dtype), "stale_number"))
    node.input[pos] = "stale_number"
    onnx.save(proto, str(path))


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    import torch

    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from tests.causes import forms20

    root = tmp_path_factory.mktemp("forms20")
    cache: dict[tuple, Any] = {}

    def go(model: str, exporter: str, opset: Optional[int] = None, edit: Optional[tuple] = None) -> Any:
        key = (model, exporter, opset, edit)
        if key not in cache:
            torch.manual_seed(0)
            path = root / f"{model}-{exporter}-{opset}-{len(cache)}.onnx"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(getattr(forms20, model)(), forms20.vec_inputs(), str(path),
                                  dynamo=exporter == "dynamo", **({} if opset is None else {"opset_version": opset}))
            if edit is not None:
                _edit_constant(path, *edit)
            cfg = Config(model=f"{SPEC}:{model}", onnx=str(path), inputs=f"{SPEC}:vec_inputs", samples=3)
            engine = Pipeline()
            run = engine.run(cfg)
            ex = engine.explain(run.result)
            cache[key] = (engine, cfg, run, ex.result, ex.explanation)
        return cache[key]

    return go


def _repaired(engine: Any, cfg: Any, run: Any, exp: Any) -> tuple[Any, Any]:
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None, fixed.not_applicable
    return fixed, engine.recheck(cfg, fixed.model)


CONSTANTS = {"divided": ("Div", 3.0, 2.5), "shared": ("Add", 0.3, 0.35)}


@pytest.mark.parametrize("model,exporter", [("divided", "torchscript"),
                                            pytest.param("divided", "dynamo", marks=pytest.mark.drifts),
                                            pytest.param("shared", "torchscript", marks=pytest.mark.drifts)])
def test_a_functional_constant_is_named_and_replaced(explained, model, exporter):
    """``x / 3.0`` held as 2.5 by the file: no module attribute has the 3.0.  The number comes from
    torch's FX call (dynamo) or from the verified re-export (TorchScript; ``shared``: the right 0.3
    is still read by another Add of the file); the headline names the constant, the patch replaces
    that node's input, repair passes check."""
    op, want, stale = CONSTANTS[model]
    engine, cfg, run, result, exp = explained(model, exporter, None, CONSTANTS[model])
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    assert (head.check, head.verified, head.kind) == ("custom-module", True, "export"), (head.check, head.message)
    assert head.patch["op"] == "replace_constant" and head.patch["value"] == pytest.approx(want)
    assert head.patch["name"] == "stale_number" and f"reads the constant {stale:g}" in head.message
    assert "re-export from the model you compare" in head.fix
    fixed, after = _repaired(engine, cfg, run, exp)
    assert [p["op"] for p in fixed.applied] == ["replace_constant"] and after.verdict == "ok"


# model -> (workaround form, kind: "" when the reference evaluator is ulps off too)
WORKAROUNDS = {"tanh_neg": ("tanh_exp", ""), "sig_one_minus": ("sigmoid_recip", "runtime")}


@pytest.mark.parametrize("model", [pytest.param("tanh_neg", marks=pytest.mark.drifts), "sig_one_minus"])
def test_an_ort_kernel_deviation_gets_a_verified_workaround(explained, model):
    """ORT's Tanh near -1 and its Sigmoid near 1 round otherwise than torch (log amplifies it): an
    equivalent formulation is verified and repair applies it."""
    form, kind = WORKAROUNDS[model]
    engine, cfg, run, result, exp = explained(model, "torchscript")
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    # an ORT kernel bug is op-compat; the same rewrite of a lowering that loses precision is stability
    assert head.check == ("stability" if head.kind == "export" else "op-compat") and head.verified, head.message
    assert head.patch == {"op": "rewrite", "node": head.onnx_nodes[0], "rewrite": "workaround", "form": form}
    assert not kind or head.kind == kind
    assert _repaired(engine, cfg, run, exp)[1].verdict == "ok"


@pytest.mark.drifts
def test_a_functional_softplus_threshold_comes_from_the_torch_program(explained):
    """``F.softplus(beta=0.5, threshold=1)`` in a TorchScript file (no FX metadata, no module
    attribute): the threshold is read from the torch program of the origin."""
    engine, cfg, run, result, exp = explained("softplus_half", "torchscript")
    head = exp.findings[0]
    assert (head.check, head.verified) == ("op-compat", True), head.message
    assert head.patch["rewrite"] == "softplus_threshold" and head.patch["threshold"] == 1.0
    assert "beta*x > 1" in head.message
    assert _repaired(engine, cfg, run, exp)[1].verdict == "ok"


def test_a_dropped_eps_is_said_and_the_re_export_grafts_across_opsets(explained):
    """TorchScript drops PairwiseDistance's eps (opset 14 file): the re-export verifies and the
    headline says the eps is gone; the dynamo re-export (opset 20) converted down to 14 keeps
    ReduceL2's opset-18 attribute (invalid), so the graft converts the file up instead, and the
    repaired file is valid and passes check."""
    import onnx

    engine, cfg, run, result, exp = explained("pdist", "torchscript", 14)
    # body's output is body.d's ONNX value: the origin is either (decide names the outer one here)
    assert result.verdict == "drift" and result.drift_origin.module in ("body", "body.d")
    head = exp.findings[0]
    assert (head.check, head.verified, head.patch["op"]) == ("normalization", True, "reexport"), head.message
    assert "eps=0.3 is in no constant or attribute of the file: the export dropped it" in head.message
    fixed, after = _repaired(engine, cfg, run, exp)
    onnx.checker.check_model(fixed.model, full_check=True)
    assert after.verdict == "ok"
