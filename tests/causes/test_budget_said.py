"""Issue 30 point 7: what the patch budget left untried is said, in the message and in the finding's
JSON evidence, for a verified cause as for an unexplained one."""
from __future__ import annotations


def test_the_untried_are_said_in_words():
    from drifttui.core.explain.causes.propose.patch_budget import left_untried

    assert left_untried(0, []) == ""
    assert left_untried(389, ["the dynamo exporter"]) == (
        " (389 more candidate patch(es); the re-export with the dynamo exporter left untried by the budget)")


def test_a_verified_cause_says_how_many_patches_were_tried_and_what_was_left(tmp_path):
    """The TorchScript folded floor_divide (tests/causes/real.py): a 10-node origin, every candidate
    within the budget: the evidence says how many were tried and that none was skipped."""
    import warnings

    import torch

    from drifttui.core.result import Config
    from tests.causes import real
    from tests.causes.conftest import explained_run

    path = tmp_path / "folded.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(real.folded(), real.cols_inputs(), str(path), dynamo=False)
    spec = real.__file__
    cfg = Config(model=f"{spec}:folded", onnx=str(path), inputs=f"{spec}:cols_inputs", samples=2)
    _, _, _, _, exp = explained_run(cfg)
    head = exp.findings[0]
    ev = head.evidence["verification"]
    assert head.verified and ev["tried"] == len(exp.trials) >= 1
    assert ev.get("skipped") is None and "left untried" not in head.message     # nothing was left: nothing said


class _Long:
    """A 600-node origin: 120 ``tanh(x * w_k) + x / 2`` steps ending in a float ``floor_divide`` that
    TorchScript truncates (Div + Cast): far more candidate patches than the budget."""

    @staticmethod
    def build():
        import torch
        from torch import nn

        class Body(nn.Module):
            def __init__(self, n: int = 120) -> None:
                super().__init__()
                self.w = nn.Parameter(torch.randn(n, 32) * 0.1 + 1.0)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                for k in range(self.w.shape[0]):
                    x = torch.tanh(x * self.w[k]) + x * 0.5
                return torch.floor_divide(x * 3.0, 0.7)

        class M(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.stem = nn.Linear(32, 32)
                self.body = Body()
                self.head = nn.Linear(32, 8)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.head(self.body(self.stem(x)))

        torch.manual_seed(0)
        return M().eval()


def build():
    return _Long.build()


def inputs():
    import torch

    return torch.randn(6, 32)


import pytest  # noqa: E402


@pytest.mark.drifts
def test_a_verified_cause_of_a_large_origin_says_what_the_budget_left(tmp_path):
    import warnings

    import torch

    from drifttui.core.result import Config
    from tests.causes.conftest import explained_run

    path = tmp_path / "long.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(build(), (inputs(),), str(path), dynamo=False)
    cfg = Config(model=f"{__file__}:build", onnx=str(path), inputs=f"{__file__}:inputs", samples=2)
    _, _, _, result, exp = explained_run(cfg)
    head = exp.findings[0]
    assert result.drift_origin.module == "body" and head.verified, head.message
    assert exp.skipped > 0 and head.evidence["verification"]["skipped"] == exp.skipped
    assert f"{exp.skipped} more candidate patch(es)" in head.message and "left untried by the budget" in head.message
