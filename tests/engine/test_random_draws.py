"""A forward that draws random numbers (batch 44M's PointNet++ farthest point sampling started at ``torch.randint``):
decide names no origin (torch differs from itself); the custom-module check says which torch call draws, in which
module, and that no patch exists (``explain/checks/randomness.py``).  Before it, the run ended in a drift verdict
with no error finding at all."""
from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import nn

from drifttui.core.capture.determinism import PREFIX
from drifttui.core.explain.checks.randomness import check, random_draws


class Start(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[torch.arange(x.shape[0]), torch.randint(0, x.shape[1], (x.shape[0],))]


class Net(nn.Module):
    def __init__(self, dropout: bool = False) -> None:
        super().__init__()
        self.lin, self.start, self.dropout = nn.Linear(4, 4), Start(), dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.gelu(self.lin(x))
        h = nn.functional.dropout(h, 0.5, training=self.dropout)
        return self.start(h).unsqueeze(1) + h


def test_each_random_draw_is_named_with_the_module_that_calls_it_and_a_dropout_off_draws_nothing():
    torch.manual_seed(0)
    model, x = Net(dropout=True).eval(), torch.randn(3, 4)
    assert random_draws(model, (x,), {}) == [("", "dropout"), ("start", "randint")]
    assert random_draws(Net().eval(), (x,), {}) == [("start", "randint")]
    assert random_draws(model.lin, (x,), {}) == []


def _ctx(model: nn.Module, notes: list[str]) -> SimpleNamespace:
    x = torch.randn(3, 4)
    node = SimpleNamespace(op_type="RandomUniformLike", proto=SimpleNamespace(name="/start/RandomUniformLike"))
    return SimpleNamespace(result=SimpleNamespace(notes=notes), model=model, sample=lambda i: ((x,), {}),
                           index=SimpleNamespace(nodes=[node]))


def test_a_torch_side_that_draws_is_an_error_finding_naming_the_call_and_no_patch():
    (f,) = check(_ctx(Net().eval(), [f"{PREFIX}: two torch forwards of sample 0 differ by up to 0.2"]))
    assert (f.check, f.severity, f.module, f.verified, f.torch_op) == ("custom-module", "error", "start", False,
                                                                      "torch.randint")
    assert "torch.randint" in f.message and "no patch exists" in f.message and "/start/RandomUniformLike" in f.message


def test_no_finding_while_torch_agrees_with_itself():
    assert check(_ctx(Net().eval(), [])) == []
