"""Issue 30 point 7: the search stops at the first patch that verifies (and holds on fresh samples),
the candidates are tried in the order the findings' ranking prefers, so the headline is the one the
whole budget would have given, and the finding says how many were left untried because one verified.

The origin ``body`` holds a LayerNorm, a linear upsample, a clamp, a ``F.hardsigmoid`` whose exported
alpha is dropped (ONNX's default 0.2, torch's 1/6: the drift) and a reflect pad: candidate patches
at the Resize, the Clip and the Pad besides the HardSigmoid's.  Real torch export, real ONNX Runtime.
"""
from __future__ import annotations

import warnings

import pytest


class _Body:
    @staticmethod
    def build():
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Body(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.norm = nn.LayerNorm(16)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                x = F.interpolate(self.norm(x).unsqueeze(1), scale_factor=2.0, mode="linear")
                return F.pad(F.hardsigmoid(x.clamp(-2.0, 5.0)), (1, 1), mode="reflect").squeeze(1)

        class M(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.stem = nn.Linear(16, 16)
                self.body = Body()
                self.head = nn.Linear(34, 4)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.head(self.body(self.stem(x)))

        torch.manual_seed(0)
        return M().eval()


def build():
    return _Body.build()


def inputs():
    import torch

    return torch.randn(4, 16)


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    import onnx
    import torch

    from drifttui.core.result import Config
    from tests.causes.conftest import explained_run

    path = tmp_path_factory.mktemp("first") / "hsig.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(build(), (inputs(),), str(path), dynamo=False)
    proto = onnx.load(str(path))
    node = next(n for n in proto.graph.node if n.op_type == "HardSigmoid")
    keep = [a for a in node.attribute if a.name != "alpha"]
    del node.attribute[:]
    node.attribute.extend(keep)
    onnx.save(proto, str(path))
    cfg = Config(model=f"{__file__}:build", onnx=str(path), inputs=f"{__file__}:inputs", samples=2)
    engine, _, _, result, exp = explained_run(cfg)
    return engine, result, exp


def _every_patch(engine, result, exp):
    """The whole budget, in the order it is tried, with the checks' findings it is verified against."""
    from drifttui.core.explain.causes.conclude import headline_order
    from drifttui.core.explain.causes.propose.assemble import candidate_patches
    from drifttui.core.explain.causes.propose.patch_budget import budget, by_likelihood
    from drifttui.core.explain.checks import run_checks

    ctx = engine.context(result)
    findings = run_checks(ctx)
    every = candidate_patches(ctx, exp.case, findings, exp.loc)
    own = sum(1 for p in every if p.spec in [f.patch for f in findings])
    likely = by_likelihood(every, exp.loc, own)[:max(budget(exp.case), own)]
    return ctx, findings, headline_order(likely, findings, exp.case, exp.loc)


def test_the_search_stops_at_the_first_patch_that_verifies(explained):
    engine, result, exp = explained
    head = exp.findings[0]
    assert result.drift_origin.module == "body" and head.verified, head.message
    assert head.patch["node"].endswith("HardSigmoid") and head.patch["name"] == "alpha"
    _, _, ordered = _every_patch(engine, result, exp)
    # the trials are the budget's first ones, the last the one that verified; none after it ran
    assert [t.patch.spec for t in exp.trials] == [p.spec for p in ordered[:len(exp.trials)]]
    assert [t.after.ok and not t.after.fails for t in exp.trials] == [False] * (len(exp.trials) - 1) + [True]
    assert exp.not_tried == len(ordered) - len(exp.trials) > 0        # the Pad's modes were not tried
    assert not any(t.patch.spec.get("node", "").endswith("Pad") for t in exp.trials)
    assert head.evidence["verification"]["not_tried"] == exp.not_tried
    assert head.evidence["verification"]["tried"] == len(exp.trials)
    assert f"{exp.not_tried} candidate patch(es) not tried: alpha=0.1667 at /body/HardSigmoid verified first" \
        in head.message


def test_the_headline_is_the_one_the_whole_budget_gives(explained):
    """Every patch of the budget tried, held on fresh samples and ranked (what ran before the stop):
    the same headline, the same patch."""
    from drifttui.core.explain.causes.conclude import merge, rank
    from drifttui.core.explain.causes.holds import hold
    from drifttui.core.explain.causes.propose.ablation import by_what_it_changed
    from drifttui.core.explain.causes.verify import verify

    engine, result, exp = explained
    ctx, findings, ordered = _every_patch(engine, result, exp)
    trials = hold(ctx, verify(exp.case, ordered))
    assert sum(t.after.ok and not t.after.fails for t in trials) >= 1
    trials = by_what_it_changed(exp.case, trials, lambda ps: hold(ctx, verify(exp.case, ps)))
    whole = rank(merge(findings, exp.case, exp.loc, trials), exp.case.module)[0]
    head = exp.findings[0]
    assert (whole.check, whole.module, whole.patch, whole.verified, whole.kind) == \
        (head.check, head.module, head.patch, head.verified, head.kind)


def test_a_patch_that_does_not_hold_on_fresh_samples_does_not_stop_the_search(monkeypatch):
    """The first patch that removes the drift on the worst sample but not on a fresh one (``hold``
    marks it failing) is passed over; the next that holds ends the search; the rest are not run."""
    from types import SimpleNamespace

    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from drifttui.core.explain.causes import verify as verify_mod
    from drifttui.core.explain.causes.locate.case import Case
    from drifttui.core.explain.causes.locate.evaluate import Eval
    from drifttui.core.onnx.edit.patches import Patch

    g = helper.make_graph([helper.make_node("Mul", ["x", "c"], ["y"], name="/body/Mul")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array(2.0, np.float32), "c")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(1, 5, dtype=np.float32)
    case = Case(model, {"x": x}, {"y": x * 3}, "body", 0, 0, 1e-5, 1e-5, nodes=["/body/Mul"], opset=17)

    def const(value: float, note: str) -> Patch:
        return Patch({"op": "replace_constant", "name": "c", "value": value, "note": note}, "custom-module", note, "",
                     payload=np.array(value, np.float32), module="body", nodes=["/body/Mul"])

    patches = [const(5.0, "wrong"), const(3.0, "lucky"), const(3.0, "holds"), const(3.0, "never run")]
    held: list[str] = []

    def fresh(ctx, trials):         # the lucky one fits the worst sample only
        for t in trials:
            held.append(t.patch.spec["note"])
            if t.patch.spec["note"] == "lucky":
                t.after = Eval(t.after.max_abs, True, True, "not on fresh sample 2")
        return trials

    monkeypatch.setattr(verify_mod, "hold", fresh)
    ctx = SimpleNamespace(cancel=None, say=lambda *a, **k: None, cache={})
    trials, unneeded = verify_mod.first_verified(ctx, case, patches)
    assert [t.patch.spec["note"] for t in trials] == ["wrong", "lucky", "holds"] and unneeded == 1
    assert held == ["lucky", "holds"]                    # only what passed the worst sample is held
    assert [t.after.ok and not t.after.fails for t in trials] == [False, False, True]
