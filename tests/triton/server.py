"""A real Triton server for the tests: PyTriton's tritonserver serving an ONNX file's ORT session
(tests/triton/serve_onnx.py) from its own venv (the OS's Python 3.11: docs/triton.md), on 127.0.0.1,
started and stopped by the test, bounded in time.  ``server_python()`` says why no server can start
(the tests then skip with that reason)."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("serve_onnx.py")
DEFAULT_PY = ROOT / ".venv-triton-server" / "bin" / "python"
START_SECONDS = 120.0


def server_python() -> tuple[Optional[str], str]:
    """(the server venv's python, "") or (None, why there is none)."""
    py = os.environ.get("DRIFTTUI_TRITON_PYTHON") or str(DEFAULT_PY)
    if not Path(py).exists():
        return None, (f"no PyTriton server venv at {py}: `make triton-server` builds it with the OS's Python 3.11 "
                      "(or set DRIFTTUI_TRITON_PYTHON)")
    probe = subprocess.run([py, "-c", "import pytriton, onnxruntime"], capture_output=True, timeout=60)
    if probe.returncode:
        return None, f"{py} cannot import pytriton and onnxruntime: {probe.stderr.decode()[-200:]}"
    return py, ""


def free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _ready(http: int, name: str) -> bool:
    import tritonclient.http as httpclient

    c = httpclient.InferenceServerClient(f"127.0.0.1:{http}", connection_timeout=2, network_timeout=2)
    try:
        return bool(c.is_model_ready(name))
    except Exception:
        return False
    finally:
        c.close()


@contextlib.contextmanager
def serving(onnx_file: str, name: str, workdir: Path, max_batch_size: int = 8, delay_us: int = 20000,
            answer: str = "ok") -> Iterator[tuple[str, str]]:
    """Serve ``onnx_file`` as model ``name``; yields (http URL, grpc URL)."""
    py, why = server_python()
    if py is None:
        import pytest

        pytest.skip(why)
    http, grpc, metrics = free_ports(3)
    log = open(workdir / f"server-{name}.log", "w")
    proc = subprocess.Popen([py, str(SCRIPT), "--onnx", onnx_file, "--name", name, "--http-port", str(http),
                             "--grpc-port", str(grpc), "--metrics-port", str(metrics),
                             "--max-batch-size", str(max_batch_size), "--delay-us", str(delay_us),
                             "--answer", answer, "--seconds", "900", "--workspace", str(workdir / f"ws-{name}")],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _ready(http, name):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (workdir / f"server-{name}.log").read_text()[-1500:]
                raise RuntimeError(f"the PyTriton server did not start (exit {proc.poll()}):\n{tail}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{http}", f"grpc://127.0.0.1:{grpc}"
    finally:
        _stop(proc)
        log.close()


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)      # its own session: the tritonserver child goes too
            proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)          # anything the server left in its group


if __name__ == "__main__":     # manual check: python tests/triton/server.py FILE NAME
    import tempfile

    with serving(sys.argv[1], sys.argv[2], Path(tempfile.mkdtemp(prefix="drifttui-triton-"))) as urls:
        print(urls)
        time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 30)
