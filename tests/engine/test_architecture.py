"""House rules: the engine never imports Textual; the TUI never imports torch/onnxruntime."""
import subprocess
import sys

from tests.conftest import ROOT


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, cwd=str(ROOT), check=True).stdout
    return set(out.split())


def test_engine_and_reports_do_not_import_textual():
    mods = _modules_after("import drifttui.core.session, drifttui.report.text, drifttui.report.json_report, drifttui.cli")
    assert "torch" in mods
    assert not any(m == "textual" or m.startswith("textual.") for m in mods)


def test_engine_never_loads_the_front_ends():
    mods = _modules_after("import drifttui.core.pipeline, drifttui.core.steps, drifttui.core.checks, "
                          "drifttui.core.diagnosis.context, drifttui.core.diagnosis.sweep, drifttui.core.session")
    assert not {"drifttui.api", "drifttui.cli", "drifttui.tui"} & mods


def test_import_contracts_hold():
    """The import-linter contracts in pyproject.toml (no cycles between steps, checks and diagnosis;
    the stages layered; core free of the front ends and of Textual)."""
    from pathlib import Path

    exe = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(exe)], capture_output=True, text=True, cwd=str(ROOT),
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout[-3000:]
    assert "broken" in out.stdout and " 0 broken" in out.stdout
