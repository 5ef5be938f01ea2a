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


def _serve(tmp_path, *args: str, app=("examples", "--help")) -> tuple[subprocess.Popen, str, str]:
    """``drifttui serve --port P ARGS -- APP`` in a subprocess; (process, URL with token, output so far).

    The output is read by a thread, line by line: select() on a buffered pipe misses lines that
    readline() already pulled into the buffer (the URL line arrives in the same chunk as the two
    before it), which made this wait time out now and then."""
    import queue
    import threading

    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "drifttui", "serve", "--port", str(port), *args, "--", *app],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    deadline, said = time.monotonic() + 60, ""
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None and lines.empty():
                break
            continue
        said += line
        if "serving at " in line:
            return proc, line.split("serving at ", 1)[1].split()[0], said
    proc.kill()
    raise AssertionError(f"drifttui serve did not start (exit code {proc.poll()}): {said}")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_serve_runs_the_tui_in_a_browser_session(tmp_path):
    aiohttp = pytest.importorskip("aiohttp")
    pytest.importorskip("textual_serve")
    report = FIXTURES / "resnet18-bf16.json"
    proc, url, _ = _serve(tmp_path, app=("tui", "--report", str(report)))
    port = int(url.split(":")[2].split("/")[0])
    try:
        async def session() -> bytes:
            deadline = time.monotonic() + 30
            async with aiohttp.ClientSession() as http:
                async with http.get(url) as page:
                    text = await page.text()
                    assert page.status == 200 and f"ws://127.0.0.1:{port}/ws/" in text
                ws_url = text.split('data-session-websocket-url="', 1)[1].split('"', 1)[0]
                buf = b""
                async with http.ws_connect(ws_url + "?width=100&height=30",
                                           origin=f"http://127.0.0.1:{port}") as ws:
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
        _stop(proc)


def test_serve_refuses_other_pages_other_hosts_and_a_missing_token(tmp_path):
    # issue 22, item 3: a foreign Origin (another web site) or Host (DNS rebinding) got the session
    aiohttp = pytest.importorskip("aiohttp")
    pytest.importorskip("textual_serve")
    proc, url, said = _serve(tmp_path)
    base, token = url.split("/?token=")
    port = base.rsplit(":", 1)[1]
    assert len(token) >= 24 and "warning" not in said          # loopback: no warning
    try:
        async def probe() -> dict:
            got = {}
            async with aiohttp.ClientSession() as http:
                async def status(path, **headers):
                    async with http.get(base + path, headers=headers, allow_redirects=False) as r:
                        return r.status, r.headers.get("Content-Security-Policy", ""), await r.text()
                got["no token"] = (await status("/"))[0]
                got["bad token"] = (await status("/?token=" + "x" * len(token)))[0]
                got["page"] = await status("/?token=" + token)
                got["rebound host"] = (await status("/?token=" + token, Host=f"evil.example:{port}"))[0]
                got["foreign origin"] = (await status("/?token=" + token, Origin="http://evil.example"))[0]
                ws = f"ws://127.0.0.1:{port}/ws/"
                for name, path, origin in (("ws foreign origin", ws + token, "http://evil.example"),
                                           ("ws bad token", ws + "nope", f"http://127.0.0.1:{port}"),
                                           ("ws own page", ws + token, f"http://127.0.0.1:{port}")):
                    try:
                        async with http.ws_connect(path + "?width=80&height=24", origin=origin) as conn:
                            got[name] = 101
                            await conn.close()
                    except aiohttp.WSServerHandshakeError as exc:
                        got[name] = exc.status
            return got

        got = asyncio.run(asyncio.wait_for(probe(), 60))
    finally:
        _stop(proc)
    status, csp, page = got.pop("page")
    assert status == 200 and f"/ws/{token}" in page
    assert got == {"no token": 403, "bad token": 403, "rebound host": 403, "foreign origin": 403,
                   "ws foreign origin": 403, "ws bad token": 403, "ws own page": 101}
    # nothing from the internet: no external font, script or style; the policy forbids it too
    assert "googleapis" not in page and not [u for u in page.split('"') if u.startswith(("https://", "//"))]
    assert "default-src 'self'" in csp and "font-src 'self'" in csp


def test_serve_warns_when_other_machines_can_reach_it(tmp_path):
    pytest.importorskip("textual_serve")
    proc, url, said = _serve(tmp_path, "--host", "0.0.0.0")
    _stop(proc)
    assert "warning: --host 0.0.0.0 can be reached from other machines" in said
    assert url.startswith("http://127.0.0.1:") and "?token=" in url


def test_report_paths_resolve_against_the_report_folder(tmp_path):
    from drifttui.core.result import Config

    (tmp_path / "model.py").write_text("")
    (tmp_path / "model.onnx").write_text("")
    cfg = Config(model="model.py:build", onnx="model.onnx", inputs="missing.npz")
    out = rebase_config(cfg, str(tmp_path))
    assert out.model == f"{tmp_path}/model.py:build" and out.onnx == f"{tmp_path}/model.onnx"
    assert out.inputs == "missing.npz"                      # not there: left for the engine to report
    assert rebase_config(Config(model="example:resnet18"), str(tmp_path)).model == "example:resnet18"


def test_tui_whose_server_is_gone_ends_by_itself(tmp_path):
    """A `drifttui tui` that `serve` started (textual-serve's web driver on a pipe) quits when the
    pipe closes: the server killed, the tab gone. Before, such a process ignored SIGTERM and spun
    at 30% CPU for hours."""
    from drifttui.tui.quit_on_signal import GRACE, POLL

    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"}
    proc = subprocess.Popen([sys.executable, "-m", "drifttui", "tui", "--report", str(FIXTURES / "resnet18.json")],
                            cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        seen = b""
        while b"__GANGLION__" not in seen and time.monotonic() < deadline and proc.poll() is None:
            seen += os.read(proc.stdout.fileno(), 4096)
        assert b"__GANGLION__" in seen, "the app never started under the web driver"
        time.sleep(1.0)
        assert proc.poll() is None              # it serves while driven
        proc.stdin.close()                      # the server goes away
        proc.wait(timeout=POLL + GRACE + 20)
        assert proc.returncode is not None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
