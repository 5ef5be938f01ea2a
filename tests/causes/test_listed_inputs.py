"""A Python-API run given a short explicit ``inputs=[...]`` list: the fresh-sample check of a verified
patch (holds.py) asks only for samples the list holds (it asked for sample ``samples + k`` and the
listed source raised IndexError), and the cause still verifies on the worst sample."""
from __future__ import annotations

import warnings

import torch


def test_a_listed_input_set_verifies_without_asking_past_its_end(tmp_path):
    import drifttui
    from tests.causes import forms30

    torch.manual_seed(0)
    model = forms30.shift()
    listed = [forms30.rows_inputs() for _ in range(2)]
    path = tmp_path / "shift.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (listed[0],), str(path), dynamo=False)
    result = drifttui.diagnose(model, onnx=str(path), inputs=listed, samples=2, step=3)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = result.findings[0]
    assert head.verified is True and head.patch["rewrite"] == "floor_div", head.message


def test_fresh_indices_stay_inside_the_listed_samples():
    from types import SimpleNamespace

    from drifttui.core.explain.causes.holds import fresh_indices

    ctx = lambda samples, count: SimpleNamespace(source=SimpleNamespace(fixed=False, count=count),  # noqa: E731
                                                 cfg=SimpleNamespace(samples=samples))
    assert fresh_indices(ctx(2, 2)) == [] and fresh_indices(ctx(2, 3)) == [2]
    assert fresh_indices(ctx(3, None)) == [3, 4]
