"""`drifttui serve` (textual-serve) really serves the TUI, and `tui --report` reruns resolve
the report's paths against its folder."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drifttui.cli import build_parser, main, rebase_config, serve_command
from tests.tui.replay import FIXTURES

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_command_defaults_to_the_demo_and_binds_localhost():
    args = build_parser().parse_args(["serve"])
    assert args.host == "127.0.0.1" and args.port == 8000
    assert serve_command(args.app_args) == f"{sys.executable} -m drifttui demo"
    args = build_parser().parse_args(["serve", "--port", "9000", "--", "tui", "--report", "r.json"])
    assert args.port == 9000 and serve_command(args.app_args).endswith("-m drifttui tui --report r.json")


def test_serve_rejects_bad_port_and_itself(capsys):
    assert main(["serve", "--port", "0"]) == 2
    assert "--port 0 is not a port number" in capsys.readouterr().err
    assert main(["serve", "--", "serve"]) == 2
    assert "cannot serve itself" in capsys.readouterr().err


def test_serve_runs_the_tui_in_a_browser_session(tmp_path):
    aiohttp = pytest.importorskip("aiohttp")
    pytest.importorskip("textual_serve")
    port = _free_port()
    report = FIXTURES / "resnet18-bf16.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "drifttui", "serve", "--port", str(port), "--",
                             "tui", "--report", str(report)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        async def session() -> bytes:
            deadline = time.monotonic() + 30
            async with aiohttp.ClientSession() as http:
                while True:        # wait for the server
                    try:
                        async with http.get(f"http://127.0.0.1:{port}/") as page:
                            assert page.status == 200 and "ws://127.0.0.1" in await page.text()
                            break
                    except aiohttp.ClientConnectorError:
                        if time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.2)
                buf = b""
                async with http.ws_connect(f"ws://127.0.0.1:{port}/ws") as ws:
                    await ws.send_str(json.dumps(["resize", {"width": 100, "height": 30}]))
                    while b"layer3.1.bn1" not in buf and time.monotonic() < deadline:
                        try:
                            msg = await ws.receive(timeout=1)
                        except asyncio.TimeoutError:
                            continue
                        if msg.type == aiohttp.WSMsgType.BINARY:
                            buf += msg.data
                        elif msg.type != aiohttp.WSMsgType.TEXT:
                            break
                return buf

        assert b"layer3.1.bn1" in asyncio.run(session())
    finally:
        proc.terminate()
        proc.wait(10)


def test_report_paths_resolve_against_the_report_folder(tmp_path):
    from drifttui.core.result import Config

    (tmp_path / "model.py").write_text("")
    (tmp_path / "model.onnx").write_text("")
    cfg = Config(model="model.py:build", onnx="model.onnx", inputs="missing.npz")
    out = rebase_config(cfg, str(tmp_path))
    assert out.model == f"{tmp_path}/model.py:build" and out.onnx == f"{tmp_path}/model.onnx"
    assert out.inputs == "missing.npz"                      # not there: left for the engine to report
    assert rebase_config(Config(model="example:resnet18"), str(tmp_path)).model == "example:resnet18"
