"""Fault test (issue 10, point 4): SIGTERM, SIGHUP and SIGINT mid-capture end the run like
Ctrl-C: the temp workdir (with its copy of the exported model) is removed, one line on stderr,
exit 128 + the signal number, no report written. A real subprocess, a real signal."""
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

SLOW_MODEL = """
import os
import time
import torch

class Slow(torch.nn.Module):
    calls = 0

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        Slow.calls += 1
        if Slow.calls == 6:     # export and tracing are done: the samples are streaming
            open(os.environ["SLOW_PROBE"], "w").close()
        time.sleep(0.02)
        return self.fc(x)

def build():
    torch.manual_seed(0)
    return Slow().eval()
"""


def _workdirs(tmp: str) -> list[str]:
    return [d for d in os.listdir(tmp) if d.startswith("drifttui-")]


@pytest.mark.parametrize("sig,code,word", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP"),
                                           (signal.SIGINT, 130, "interrupted")])
def test_signal_mid_capture_cleans_up_and_exits(tmp_path, sig, code, word):
    (tmp_path / "slow.py").write_text(SLOW_MODEL)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    report = tmp_path / "r.json"
    probe = tmp_path.parent / f"{tmp_path.name}-probe"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp), SLOW_PROBE=str(probe))
    proc = subprocess.Popen([sys.executable, "-m", "drifttui", "check", f"{tmp_path / 'slow.py'}:build",
                             "--inputs", "shape:2x8", "--samples", "2000", "--json", str(report)],
                            cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not probe.exists():      # mid-capture
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never reached the capture stage"
            time.sleep(0.05)
        assert proc.poll() is None
        assert any(f.endswith(".onnx") for d in _workdirs(str(tmp)) for f in os.listdir(tmp / d))
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and word in lines[0] and "Traceback" not in err, err
    assert _workdirs(str(tmp)) == [], "the temp workdir was left behind"
    assert not report.exists()
    assert sorted(os.listdir(tmp_path)) == ["slow.py", "tmp"]     # nothing written next to the model
