"""The tmux-driven check of the real TUI at 80x24 (scripts/tmux_check.py): slow (the real
engine runs the demo and step 3), so it runs when DRIFTTUI_TMUX=1 (`make tui-check` runs the
script directly)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not os.environ.get("DRIFTTUI_TMUX"), reason="slow: set DRIFTTUI_TMUX=1 (or make tui-check)")
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_80x24_fix_palette_and_quick_quit():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "tmux_check.py")], capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "q during a rerun exits" in proc.stdout
