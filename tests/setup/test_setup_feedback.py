"""Set-up feedback (issue 23 item 17): `make demo` / `make test` say each install step before
it starts, and pyproject.toml builds without setuptools deprecation warnings."""
from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLOW_STEPS = ("-m venv", "pip install", "compileall")


def _dry_run(target: str, venv: Path) -> list[str]:
    out = subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip() and not line.startswith("make")]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["demo", "test"])
def test_every_install_step_is_announced_before_it_runs(target, tmp_path):
    lines = _dry_run(target, tmp_path / "fresh-venv")     # a fresh machine: every step runs
    slow = [k for k, line in enumerate(lines) if any(s in line for s in SLOW_STEPS)]
    assert len(slow) >= (4 if target == "demo" else 7), lines
    for k in slow:
        previous = lines[k - 1] if k else ""
        assert previous.startswith("echo"), f"{lines[k]!r} runs without a line saying so first"
    # the echo says what is installed, not only a step number
    assert any("torch" in line for line in lines if line.startswith("echo"))


def test_pyproject_license_is_an_spdx_expression_without_deprecation_warnings():
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), str(ROOT / "pyproject.toml"))
    messages = [str(w.message).splitlines()[0] for w in caught if "Deprecat" in w.category.__name__]
    assert messages == []
    assert dist.metadata.license_expression == "MIT"
