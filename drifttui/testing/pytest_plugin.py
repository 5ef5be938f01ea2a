"""The ``drift_check`` pytest fixture (registered through the ``pytest11`` entry point "drifttui").

    def test_export(drift_check):
        drift_check(model, "deployed.onnx", inputs=x)          # fails the test on drift

``drift_check(model, onnx=None, inputs=None, **options)`` is :func:`drifttui.assert_no_drift`:
the failure message names the origin, its errors and the cause; it returns the Result when the
gate passes. Options: ``samples``, ``atol``, ``rtol``, ``fail_on``, ``min_top1``, ``baseline``, ...
``--drifttui-samples N`` on the pytest command line overrides the default number of samples.
"""
from __future__ import annotations

from typing import Any, Callable

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("drifttui")
    group.addoption("--drifttui-samples", type=int, default=None, metavar="N",
                    help="samples per drift_check call when the test does not say (drifttui's default: 100)")


@pytest.fixture
def drift_check(request: Any) -> Callable[..., Any]:
    """Call with (model, onnx=None, inputs=None, **options); fails the test when the export drifts."""
    default_samples = request.config.getoption("--drifttui-samples", default=None)

    def run(model: Any, onnx: Any = None, inputs: Any = None, **options: Any) -> Any:
        from drifttui.python_api import assert_no_drift

        if default_samples is not None:
            options.setdefault("samples", default_samples)
        __tracebackhide__ = True
        return assert_no_drift(model, onnx, inputs, **options)

    return run
