"""A real headless Chromium for the HTML report's tests and screenshots (apt-get install chromium).

``find()`` is None when no Chromium is installed (the tests then skip, saying how to install it);
``dump_dom`` gives the DOM after the page loaded (what a browser shows, scripts run -- if any could),
``screenshot`` a PNG.  Pages are opened as file:// URLs with no network (``--host-resolver-rules``
maps every host to nothing).  A page that draws after it loads (Model Explorer's graph) is driven
over the DevTools protocol instead: tests/cdp.py."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--disable-extensions"]


def find() -> Optional[str]:
    return next((p for p in map(shutil.which, NAMES) if p), None)


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    exe = find()
    if exe is None:
        raise RuntimeError("no Chromium: apt-get install -y chromium")
    with tempfile.TemporaryDirectory(prefix="drifttui-chromium-") as profile:
        return subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout)


def dump_dom(page: Path) -> str:
    done = _run(["--virtual-time-budget=2000", "--dump-dom", page.resolve().as_uri()])
    return done.stdout


def screenshot(page: Path, png: Path, size: tuple[int, int] = (1200, 1500)) -> Path:
    _run([f"--window-size={size[0]},{size[1]}", f"--screenshot={png.resolve()}", page.resolve().as_uri()])
    if not png.is_file():
        raise RuntimeError(f"Chromium wrote no screenshot {png}")
    return png
