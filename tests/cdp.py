"""A real headless Chromium driven over the DevTools protocol, for pages that draw after they load
(Model Explorer lays its graph out in a web worker and draws it with WebGL: a plain
``--screenshot`` fires before that, and ``--virtual-time-budget`` never ends on its worker).

``Tab`` opens a page, waits until a JavaScript expression is true (``wait``), reads values
(``evaluate``) and captures PNGs (``screenshot``).  The WebSocket the protocol runs over is the
minimal client RFC 6455 asks for (masked text frames out; text, continuation, ping and close frames
in): no dependency beyond the standard library.  Chromium runs with SwiftShader's software WebGL
(``--use-angle=swiftshader``), so the graph is drawn on a machine without a GPU."""
from __future__ import annotations

import base64
import json
import os
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlparse

from tests.browser import find

FLAGS = ["--headless", "--no-sandbox", "--hide-scrollbars", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--mute-audio"]


class WebSocket:
    """One client connection: ``send`` a text message, ``recv`` the next whole one."""

    def __init__(self, url: str, timeout: float = 60) -> None:
        u = urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the DevTools socket closed during the handshake")
            head += chunk
        status, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise ConnectionError(f"DevTools refused the WebSocket: {status.splitlines()[0]!r}")

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise ConnectionError("the DevTools socket closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def _frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        head += (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 1 << 16
                 else bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, text: str) -> None:
        self._frame(0x1, text.encode())

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            n = struct.unpack(">H", self._read(2))[0] if n == 126 else struct.unpack(">Q", self._read(8))[0] if n == 127 else n
            payload = self._read(n)
            opcode = b0 & 0x0F
            if opcode == 0x9:
                self._frame(0xA, payload)           # pong
            elif opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            elif opcode in (0x0, 0x1, 0x2):
                parts.append(payload)
                if b0 & 0x80:
                    return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()


class Tab:
    """A headless Chromium with one page, driven over the DevTools protocol (use as a context manager)."""

    def __init__(self, size: tuple[int, int] = (1280, 800), timeout: float = 120) -> None:
        exe = find()
        if exe is None:
            raise RuntimeError("no Chromium: apt-get install -y chromium")
        self.size, self.timeout = size, timeout
        self.profile = tempfile.TemporaryDirectory(prefix="drifttui-cdp-", ignore_cleanup_errors=True)
        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={self.profile.name}",
                                      f"--window-size={size[0]},{size[1]}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ids = 0
        try:
            self.ws = WebSocket(self._page_socket(), timeout)
            self.call("Page.enable")
            self.call("Runtime.enable")
            self.call("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1], deviceScaleFactor=1,
                      mobile=False)
        except BaseException:
            self.close()
            raise

    def _page_socket(self) -> str:
        port_file = Path(self.profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Chromium exited ({self.proc.returncode}) before DevTools was up")
            if port_file.is_file() and port_file.read_text().strip():
                port = port_file.read_text().split()[0]
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    return pages[0]["webSocketDebuggerUrl"]
            time.sleep(0.1)
        raise RuntimeError("Chromium's DevTools port did not open within 30 s")

    def call(self, method: str, **params: Any) -> dict:
        self.ids += 1
        me = self.ids
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == me:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def wait(self, expression: str, timeout: Optional[float] = None, every: float = 0.25) -> Any:
        """Poll ``expression`` until it is truthy; return its value (a RuntimeError after ``timeout``)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(every)
        raise TimeoutError(f"the page never showed {expression[:120]!r} within {timeout or self.timeout:.0f} s")

    def screenshot(self, png: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        png.write_bytes(base64.b64decode(data))
        return png

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.profile.cleanup()

    def __enter__(self) -> "Tab":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
