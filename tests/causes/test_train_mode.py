"""A file exported from the model in TRAINING mode, compared with the model in eval() (batch 41F of session 41;
propose/reexport/train_mode.py): ``training=TrainingMode.TRAINING`` / ``PRESERVE`` (TorchScript) or a model left in
``train()`` (dynamo) writes the train-mode forward: a ``BatchNormalization`` with ``training_mode=1`` (and running
statistics the export's own trace moved), a ``Dropout`` drawing masks (Samsung/ONE#12087, pytorch/pytorch#52867,
microsoft/onnxscript#1791).  The first run verified the eval re-export but told "the exporter's lowering" (or "the
export dropped eps"); the story now says the file computes the module's training-mode forward.  Real torch exports,
ONNX Runtime and drifttui's pipeline on a three-call model; a module whose class never reads ``training`` costs no
export."""
from __future__ import annotations

import warnings
from pathlib import Path

import torch
from torch import nn

from tests.causes.conftest import explained_run

SPEC = str(Path(__file__))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.norm = nn.BatchNorm1d(8)
        with torch.no_grad():
            self.norm.running_mean.copy_(torch.linspace(-1.0, 1.0, 8))
            self.norm.running_var.copy_(torch.linspace(0.5, 2.0, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.lin(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 8)


def test_reads_training_is_the_cheap_gate():
    from drifttui.core.explain.causes.propose.reexport.train_mode import reads_training

    assert reads_training(nn.BatchNorm1d(4)) and reads_training(nn.Dropout(0.1))
    assert reads_training(nn.InstanceNorm1d(4, track_running_stats=True))
    assert not reads_training(nn.Sequential(nn.Linear(4, 4), nn.GELU()))


def test_a_batch_norm_exported_in_training_mode_is_told_as_such_and_repaired(tmp_path):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.explain.causes.deliver.source_fix import source_fixes
    from drifttui.core.onnx.graph import full_model
    from drifttui.core.result import Config

    path = tmp_path / "trained.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model(), (rows(),), str(path), dynamo=False, training=torch.onnx.TrainingMode.TRAINING)
    engine, cfg, run, result, exp = explained_run(Config(model=f"{SPEC}:model", onnx=str(path),
                                                         inputs=f"{SPEC}:rows", samples=2))
    assert result.verdict == "drift" and result.drift_origin.module == "norm"
    head = exp.findings[0]
    assert (head.check, head.verified) == ("normalization", True), head.message
    assert "training-mode forward" in head.message and "training_mode=1" in head.message, head.message
    assert "model.eval()" in head.fix
    fixed = repair(full_model(run.prepared.index), exp)
    assert fixed.model is not None and engine.recheck(cfg, fixed.model).verdict == "ok"
    # the change at the source is the mode, not another exporter
    (code, _), = source_fixes(fixed.applied, exp.findings, 20, "torchscript")
    assert code.startswith("model.eval(); torch.onnx.export(") and "TrainingMode.EVAL" in code, code
