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
