"""A drift the TorchScript exporter's ONNX peephole pass made, told as the pass's (model/peephole.py,
propose/reexport/pass_rewrite.py).  For a TorchScript file the origin is first re-exported by the same exporter
*without* its peephole pass; when that computes what torch computes and the same export *with* the pass does not,
the pass is the cause, and the two graphs' computing nodes say what it fused.  torch has no switch for the pass:
drifttui puts a no-op in its place for its own export in its own thread.  The model: a log-softmax over the batch
(dim 0) fed to an NLL loss, which ``fuseLogSoftmaxNllLoss`` fuses into one SoftmaxCrossEntropyLoss over axis 1
(pytorch/pytorch#34830).  The engine's runs sit behind ``drifts``."""
from __future__ import annotations

import io
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn


class _ColumnLoss(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        labels = torch.arange(x.shape[0]) % x.shape[1]
        loss = F.nll_loss(F.log_softmax(x, 0), labels, reduction="none")
        return x + loss[:, None]


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.body = _ColumnLoss()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def tiny_column_loss() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 8) * 3


def _ops(module: nn.Module, x: torch.Tensor, peephole: bool) -> tuple[list[str], np.ndarray]:
    import onnx
    import onnxruntime as ort

    from drifttui.core.model.peephole import without_onnx_peephole

    buf = io.BytesIO()
    with (without_onnx_peephole() if not peephole else _nothing()):
        torch.onnx.export(module, (x,), buf, dynamo=False)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    return [n.op_type for n in onnx.load_from_string(buf.getvalue()).graph.node], got


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


@pytest.mark.filterwarnings("ignore")
def test_the_export_without_the_pass_keeps_the_calls_apart_and_computes_what_torch_computes():
    x = rows_inputs()
    with torch.no_grad():
        want = _ColumnLoss()(x).numpy()
    fused, got_fused = _ops(_ColumnLoss(), x, peephole=True)
    apart, got_apart = _ops(_ColumnLoss(), x, peephole=False)
    assert "SoftmaxCrossEntropyLoss" in fused and "LogSoftmax" not in fused
    assert {"LogSoftmax", "NegativeLogLikelihoodLoss"} <= set(apart)
    assert np.abs(got_fused - want).max() > 1e-2            # the fusion ignores dim 0
    np.testing.assert_allclose(got_apart, want, atol=1e-5)
    # the pass is back afterwards
    assert "SoftmaxCrossEntropyLoss" in _ops(_ColumnLoss(), x, peephole=True)[0]


@pytest.mark.filterwarnings("ignore")
def test_another_thread_s_export_keeps_the_pass_while_one_thread_leaves_it_out():
    from drifttui.core.model.peephole import without_onnx_peephole

    x, seen = rows_inputs(), {}
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait(30)
        seen["ops"] = _ops(_ColumnLoss(), x, peephole=True)[0]
        done.set()

    worker = threading.Thread(target=other)
    worker.start()
    with without_onnx_peephole():
        inside.set()
        done.wait(60)
    worker.join(60)
    assert "SoftmaxCrossEntropyLoss" in seen["ops"]


class _Variant:
    """The fields pass_rewrite reads of variants.Variant, and its ``_replace``."""

    def __init__(self, why: str, optimize: bool = True, peephole: bool = True) -> None:
        self.why, self.optimize, self.peephole = why, optimize, peephole

    def _replace(self, **kw: object) -> "_Variant":
        out = _Variant(self.why, self.optimize, self.peephole)
        out.__dict__.update(kw)
        return out


def test_the_pass_is_named_only_when_the_same_export_with_it_drifts():
    from drifttui.core.explain.causes.propose.reexport.pass_rewrite import pass_rewrite
    from tests.causes.test_optimizer_rewrite import _graph

    fused, apart = _graph([("Mul", 2.0), ("Sub", 1.0)]), _graph([("Mul", 2.0), ("Add", 1.0), ("Relu", 0.0)])
    case = type("Case", (), {"model": fused})()
    unfused = _Variant("without the pass", peephole=False)
    told = pass_rewrite(case, apart, unfused, lambda v: fused, lambda m: False)
    assert told.variant is unfused and told.made == {"Sub"}
    assert told.said == "the peephole pass put Sub (x - 1) where the lowering has Add (x + 1), Relu"
    # with the pass the export computes what torch computes too: the pass is innocent, the variant proves nothing
    assert pass_rewrite(case, apart, unfused, lambda v: fused, lambda m: True).variant is None
    # the same contrast for the dynamo exporter's optimizer: named when the export with it drifts, else nothing
    unoptimized = _Variant("without the optimizer", optimize=False)
    assert pass_rewrite(case, apart, unoptimized, lambda v: fused, lambda m: False).said.startswith("the optimizer put")
    assert pass_rewrite(case, apart, unoptimized, lambda v: fused, lambda m: True).variant is None


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    return explained_forms(tmp_path_factory, "test_peephole_rewrite")


@pytest.mark.drifts
def test_the_peephole_fusion_is_told_verified_and_repaired(explained):
    from tests.causes.form_suite import assert_verified_and_repaired

    assert_verified_and_repaired(explained, ("tiny_column_loss", "torchscript"),
                                 ("lowering", "reexport", {"exporter": "torchscript", "peephole": False},
                                  "the peephole pass put SoftmaxCrossEntropyLoss where the lowering has "
                                  "LogSoftmax, NegativeLogLikelihoodLoss"), "body")


@pytest.mark.drifts
def test_the_source_fix_never_prints_the_export_call_that_wrote_the_fusion(explained):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.explain.causes.deliver.source_fix import source_fixes
    from drifttui.core.onnx.graph import full_model

    _, _, run, _, exp = explained("tiny_column_loss", "torchscript")
    fixed = repair(full_model(run.prepared.index), exp)
    [(code, words)] = source_fixes(fixed.applied, exp.findings, 17, "torchscript")
    assert code == "" and "dynamo=True" in words and "peephole" in words


@pytest.mark.drifts
def test_the_dynamo_file_keeps_the_log_softmax_s_dim(explained):
    from tests.causes.form_suite import assert_clean

    assert_clean(explained, ("tiny_column_loss", "dynamo"))
