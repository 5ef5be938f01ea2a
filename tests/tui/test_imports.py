"""The TUI package never imports torch, onnx or onnxruntime (the engine does, lazily)."""
from __future__ import annotations

import subprocess
import sys


def test_tui_does_not_import_torch_or_onnx():
    code = (
        "import sys; import drifttui.tui.app, tests.tui.replay, drifttui.tui.screens.detail; "
        "bad = [m for m in ('torch', 'onnx', 'onnxruntime', 'drifttui.core.session') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
