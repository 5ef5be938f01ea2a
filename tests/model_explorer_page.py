"""Model Explorer's page with drifttui's node data, as a user opens it: a real Model Explorer server
(``python -m model_explorer --extensions=model_explorer_onnx --no_open_in_browser``, on a free port)
and the link ``--model-explorer`` prints, opened in a real headless Chromium (tests/cdp.py).

``missing()`` says what is not installed (the tests skip with it); ``server()`` runs one server;
``open_link(tab, url, port)`` opens the printed link on that server's port and waits until the graph
is laid out with the node data loaded; ``shown(tab)`` is what the page then shows."""
from __future__ import annotations

import contextlib
import importlib.util
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from typing import Iterator, Optional
from urllib.parse import urlparse

from tests import browser
from tests.cdp import Tab

SERVER_START = 120      # the server loads every adapter before it answers: 10-25 s here


def missing() -> Optional[str]:
    """Why the page cannot be opened here (for pytest's skip), or None."""
    if browser.find() is None:
        return "no Chromium: apt-get install -y chromium"
    for module in ("model_explorer", "model_explorer_onnx"):
        if importlib.util.find_spec(module) is None:
            return f"no {module}: pip install 'drifttui[overlay]'"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server() -> Iterator[int]:
    """A Model Explorer server with the ONNX adapter on 127.0.0.1 (no browser of its own): its port."""
    port = _free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "model_explorer", "--extensions=model_explorer_onnx",
                                 "--no_open_in_browser", "--host", "127.0.0.1", "--port", str(port)],
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_healthy(proc, port, log)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_healthy(proc: subprocess.Popen, port: int, log) -> None:
    deadline = time.monotonic() + SERVER_START
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"model-explorer exited ({proc.returncode}): {log.read().decode()[-800:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/check_health", timeout=2) as r:
                if r.read() == b"model_explorer_ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"model-explorer did not answer on port {port} within {SERVER_START} s")


def on_port(url: str, port: int) -> str:
    """The printed link (``http://localhost:8080/?data=...``) on the port the server really took."""
    u = urlparse(url)
    return u._replace(netloc=f"{u.hostname}:{port}").geturl()


# Model Explorer keeps its renderers in window.me_test (its own test hook): the graph is laid out
# when the renderer has nodes to draw; the node data has loaded when the side panel lists it.
_READY = """(() => {
  const r = window.me_test && window.me_test.renderers && window.me_test.renderers[0];
  const text = document.body ? document.body.innerText : '';
  return !!(r && r.nodesToRender && r.nodesToRender.length && !text.includes('Processing graph')
            && text.includes('NODE DATA PROVIDERS') && text.includes('status 3=origin'));
})()"""

_SHOWN = """(() => {
  const r = window.me_test.renderers[0];
  const canvas = document.querySelector('canvas.main') || document.querySelector('canvas');
  return {selected: r.selectedNodeId, rendered: r.nodesToRender.map(n => n.node.id),
          text: document.body.innerText, canvas: canvas ? canvas.getBoundingClientRect().toJSON() : null};
})()"""


@dataclass
class Shown:
    selected: str               # the node the renderer has selected
    rendered: list[str]         # the nodes and layers on screen (a collapsed layer hides its nodes)
    text: str                   # the page's text
    canvas: dict                # where the graph is drawn (CSS pixels)

    def node_info_id(self) -> Optional[str]:
        """The id in the side panel's NODE INFO (shown only while a node is selected)."""
        m = re.search(r"NODE INFO\s[\s\S]*?\bid\s+(\S+)", self.text)
        return m.group(1) if m else None

    def provider_values(self) -> dict[str, str]:
        """The selected node's node-data values the side panel lists, by provider name."""
        part = self.text.split("NODE DATA PROVIDERS", 1)[-1]
        from drifttui.report.model_explorer import NAMES

        names = "|".join(re.escape(n) for n in NAMES.values())
        return dict(re.findall(rf"^({names})\n\t\n([^\n]*)$", part, re.M))


def open_link(tab: Tab, url: str, port: int, settle: float = 2.0) -> Shown:
    """Open the printed link on ``port``; wait for the laid-out graph and its node data, then ``settle``
    seconds more (a late relayout would undo the selection in that time); what the page shows."""
    tab.open(on_port(url, port))
    tab.wait(_READY, timeout=90)
    time.sleep(settle)
    return Shown(**tab.evaluate(_SHOWN))
