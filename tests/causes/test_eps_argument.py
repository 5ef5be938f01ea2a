"""An ``eps`` passed to a torch call (not held by a module) that the file leaves out: the fuzzer's seed 34115 left
open that TorchScript's ``pairwise_distance`` drops the eps torch adds to each difference, and the story named the
node where the values part ("Pow computes something else than torch") without saying why.  The story now reads the
origin's torch calls as the module made them (before the exporter's decompositions), and an ``eps`` argument that
no constant or ``epsilon`` attribute of the origin's nodes holds is said as the lowering of that op leaving it out,
classed by that op (``lowering`` for a distance, ``normalization`` for a norm).  The model is this module's own."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn


class _Near(nn.Module):
    """distances between rows and their near duplicates (differences of 1e-3 or 0), at eps=1e-2."""

    def __init__(self) -> None:
        super().__init__()
        self.p = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pairwise_distance(x, x + 1e-3 * self.p(x).tanh().round(), eps=1e-2)


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre, self.body, self.head = nn.Linear(8, 8), _Near(), nn.Linear(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.pre(x)).unsqueeze(-1))


def near_eps() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(4, 8)


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    return explained_forms(tmp_path_factory, "test_eps_argument")


def test_an_eps_argument_the_file_leaves_out_is_said_by_the_op_that_takes_it(explained):
    from tests.causes.form_suite import assert_verified_and_repaired

    run = explained("near_eps", "torchscript")
    assert_verified_and_repaired(explained, ("near_eps", "torchscript"),
                                 ("lowering", "reexport", {"exporter": "dynamo"}, "pairwise_distance"), "body")
    head = run[4].findings[0]
    assert "in torch's pairwise_distance (" in head.message, head.message       # opened with the torch op
    assert "its pairwise_distance call passes eps=0.01, which no constant or attribute of the file holds" \
        in head.message, head.message
    assert "exporter's lowering of it leaves the eps out" in head.message, head.message


def test_the_dynamo_file_keeps_the_eps(explained):
    from tests.causes.form_suite import assert_clean

    assert_clean(explained, ("near_eps", "dynamo"))
