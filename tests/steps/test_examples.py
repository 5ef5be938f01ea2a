"""The built-in examples: each drifted one gets an error finding naming its origin and cause class;
clean ones get none (static checks, one sample, to keep the suite fast)."""
from __future__ import annotations

import pytest

from drifttui.core.explain.checks import run_checks
from drifttui.core.pipeline import Pipeline
from drifttui.core.result import Config
from drifttui.core.model.examples import EXAMPLES


def _findings(name):
    engine = Pipeline()
    r = engine.run(Config(model=f"example:{name}", example=name, samples=1)).result
    return r, run_checks(engine.context(r), static_only=True)


@pytest.mark.parametrize("name", [n for n, e in EXAMPLES.items() if e.drifted])
def test_drifted_example_names_origin_and_cause(name):
    ex = EXAMPLES[name]
    r, found = _findings(name)
    assert r.drift_origin.module == ex.expected_origin
    errs = [f for f in found if f.severity == "error"]
    assert errs and (errs[0].check, errs[0].module) == (ex.cause, ex.expected_origin), errs[:2]


@pytest.mark.parametrize("name", ["transformer-layerscale", "unet"])
def test_clean_example_has_no_error(name):
    r, found = _findings(name)
    assert r.verdict == "ok"
    assert [f for f in found if f.severity == "error"] == []
