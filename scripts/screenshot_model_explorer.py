"""screenshots/model-explorer-origin.png: ``--model-explorer`` in Google Model Explorer, as a user
opens it.  The built-in ``unet-resize`` example is exported to an ONNX file in a temp folder, checked
with ``drifttui check --example unet-resize --onnx FILE --model-explorer drift.json`` (a real run),
and the link that run prints is opened on a real Model Explorer server in a real headless Chromium
(tests/model_explorer_page.py, tests/cdp.py): the graph coloured by the status file, the origin's
Resize node selected, its layers expanded, its node data in the side panel.  Needs torch, Chromium
and ``drifttui[overlay]``; scripts/screenshots.py calls it.

    .venv/bin/python scripts/screenshot_model_explorer.py [--out screenshots]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXAMPLE = "unet-resize"
NAME = "model-explorer-origin.png"


def export(folder: Path) -> Path:
    """The example's drifted ONNX file, as a user's deployed file would be."""
    from drifttui.core.model.examples import get_example

    ex = get_example(EXAMPLE)
    return ex.export(ex.build_model(), (ex.make_inputs(0), {}), "dynamo", folder)


def printed_link(onnx: Path, folder: Path) -> str:
    """Run the check as a user would and take the link it prints on stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "drifttui", "check", "--example", EXAMPLE, "--onnx", str(onnx),
                           "--samples", "5", "--model-explorer", str(folder / "drift.json")],
                          capture_output=True, text=True, env=env, timeout=600)
    links = [w for w in done.stderr.split() if w.startswith("http://localhost:")]
    if done.returncode != 1 or not links:
        raise RuntimeError(f"the check printed no Model Explorer link (exit {done.returncode}): {done.stderr[-800:]}")
    return links[0]


def shoot(out: Path) -> Path:
    from tests import model_explorer_page as me
    from tests.cdp import Tab

    why = me.missing()
    if why:
        raise RuntimeError(why)
    with tempfile.TemporaryDirectory(prefix="drifttui-me-shot-") as d:
        folder = Path(d)
        link = printed_link(export(folder), folder)
        with me.server() as port, Tab((1280, 800)) as tab:
            shown = me.open_link(tab, link, port)
            if not shown.selected:
                raise RuntimeError("Model Explorer opened without the origin selected")
            return tab.screenshot(out / NAME)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate screenshots/" + NAME)
    parser.add_argument("--out", default=str(ROOT / "screenshots"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(shoot(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
