"""One consistent story on the built-in examples: the headline, step 3 and step 6 agree."""
from __future__ import annotations

import pytest

from drifttui.core.result import Config
from drifttui.core.explain.steps import STEP_NUMBERS
from drifttui.core.pipeline import Pipeline


@pytest.fixture(scope="module")
def bf16():
    engine = Pipeline()
    r = engine.run(Config(model="example:resnet18-bf16", example="resnet18-bf16", samples=2)).result
    return engine.explain(r, STEP_NUMBERS).result


def test_bf16_headline_is_verified_dtype_through_the_fold(bf16):
    head = bf16.headline
    assert head.check == "dtype" and head.verified is True and head.module == "layer3.1.bn1"
    assert head.patch["op"] == "replace_initializer" and "fold" in head.patch["source"]
    assert head.local_after < bf16.tolerance.atol < head.local_before


def test_bf16_steps_do_not_contradict_the_headline(bf16):
    steps = {s.step: s for s in bf16.steps}
    assert steps[3].verdict == "fail" and "verified" in steps[3].summary
    assert steps[6].verdict == "fail" and "bfloat16" in steps[6].summary      # not "everything matches"
    assert "layer3.1.conv1.weight" in steps[6].summary


def test_no_hygiene_warning_heads_a_drift(bf16):
    assert bf16.findings[0].severity == "error"
    order = {"error": 0, "warning": 1, "info": 2}
    assert [f.severity for f in bf16.findings] == sorted((f.severity for f in bf16.findings), key=order.get)


def test_bf16_inspector_shows_the_difference_through_the_fold(bf16):
    layer = next(L for L in bf16.layers if L.module == "layer3.1.bn1")
    init = next(i for i in layer.initializers if i.name == "layer3.1.conv1.weight")
    assert init.torch_max_abs_diff is not None and init.torch_max_abs_diff > 1e-4
    clean = next(L for L in bf16.layers if L.module == "layer3.0.bn1")
    assert all(i.torch_max_abs_diff is None or i.torch_max_abs_diff < 1e-5 for i in clean.initializers)
