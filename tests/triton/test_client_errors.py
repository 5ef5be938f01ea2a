"""A server that cannot be reached ends in one line and a documented exit code, fast (no server needed)."""
import socket
import time

import pytest

from drifttui.cli import main
from tests.conftest import without_progress
from tests.triton.conftest import NETS


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("scheme", ["http", "grpc"])
def test_unreachable_server(files, capsys, scheme):
    t = time.monotonic()
    code = main(["check", f"{NETS}:mlp", "--onnx", files["mlp"], "--triton-url",
                 f"{scheme}://127.0.0.1:{_closed_port()}", "--model", "m", "--samples", "2"])
    err = without_progress(capsys.readouterr().err)      # the one error line, besides the progress lines
    assert code == 2 and time.monotonic() - t < 40
    assert "cannot reach the Triton server" in err and err.count("\n") == 1


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1", "127.0.0.1:8000", "http://127.0.0.1:80/v2", "http://:8000"])
def test_bad_url(capsys, url):
    assert main(["check", f"{NETS}:mlp", "--onnx", "x.onnx", "--triton-url", url, "--model", "m"]) == 2
    assert "is not http://HOST:PORT or grpc://HOST:PORT" in capsys.readouterr().err


def test_served_options_need_each_other(capsys):
    assert main(["check", f"{NETS}:mlp", "--triton-url", "http://127.0.0.1:1"]) == 2
    assert "need --model NAME" in capsys.readouterr().err
    assert main(["check", f"{NETS}:mlp", "--model", "m"]) == 2
    assert "no --triton-repo or --triton-url" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["repro", "repair"])
def test_commands_without_the_served_comparison_refuse_its_options(capsys, command, tmp_path):
    assert main([command, f"{NETS}:mlp", "--batch-sweep", "1,4", "--out", str(tmp_path / "out")]) == 2
    assert "does not take --triton-repo, --triton-url or --batch-sweep yet" in capsys.readouterr().err


def _opened(monkeypatch) -> list:
    seen: list = []
    monkeypatch.setattr("drifttui.tui.app.run_app", lambda engine, config=None, result=None, stages=None:
                        seen.append((config, stages)) or 0)
    return seen


def test_tui_takes_the_served_options(monkeypatch, tmp_path):
    seen = _opened(monkeypatch)
    assert main(["tui", f"{NETS}:mlp", "--triton-repo", str(tmp_path), "--model", "m", "--batch-sweep", "1,4"]) == 0
    config, stages = seen[0]
    assert (config.triton_repo, config.triton_model, config.batch_sweep, stages) == (str(tmp_path), "m", (1, 4), [])


def test_tui_stages_show_the_deployed_file_and_are_checked(monkeypatch, tmp_path, capsys):
    seen = _opened(monkeypatch)
    raw, deployed = tmp_path / "raw.onnx", tmp_path / "deployed.onnx"
    raw.write_bytes(b"x")
    deployed.write_bytes(b"x")
    assert main(["tui", f"{NETS}:mlp", "--stages", str(raw), str(deployed)]) == 0
    assert seen[0][0].onnx == str(deployed) and seen[0][1] == [str(raw), str(deployed)]
    capsys.readouterr()
    assert main(["tui", f"{NETS}:mlp", "--stages", str(raw), str(tmp_path / "gone.onnx")]) == 2
    err = capsys.readouterr().err
    assert "gone.onnx does not exist" in err and err.count("\n") == 1
    assert main(["tui", f"{NETS}:mlp", "--stages", str(raw)]) == 2
    assert "at least two files" in capsys.readouterr().err
    assert main(["tui", f"{NETS}:mlp", "--onnx", str(raw), "--stages", str(raw), str(deployed)]) == 2
    assert main(["tui", "--report", str(raw), "--stages", str(raw), str(deployed)]) == 2
    assert "does not take --stages" in capsys.readouterr().err
    assert len(seen) == 1
