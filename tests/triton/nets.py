"""Tiny models for the served-model tests (loaded by drifttui as ``tests/triton/nets.py:NAME``)."""
import torch
from torch import nn


class BatchCentre(nn.Module):
    """Subtracts half the batch mean: one sample alone gets 0.5 x, a batch mixes its samples (the kind
    of layer a dynamic batcher breaks, like a BatchNorm left in training mode)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - 0.5 * x.mean(0, keepdim=True)


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10)).eval()


def batch_dependent() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), BatchCentre(), nn.Linear(32, 10)).eval()


def export(model: nn.Module, path: str, features: int = 16, dtype: torch.dtype = torch.float32) -> str:
    """``model`` exported with a dynamic batch dim (input ``x``, output ``y``), as a deployment would."""
    x = torch.randn(2, features)
    batch = torch.export.Dim("batch", min=1, max=1024)
    prog = torch.onnx.export(model, (x,), dynamo=True, input_names=["x"], output_names=["y"],
                             dynamic_shapes=({0: batch},))
    prog.save(path)
    return path


def mlp_retrained() -> nn.Module:
    """The same architecture with other weights: a second version of the model."""
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10)).eval()
