"""`--model-explorer PATH` in the real viewer (issue 35 item 2, "the overlay opens and shows the
origin"): a real Model Explorer server, the link the run prints opened in a real headless Chromium
(DevTools protocol, software WebGL).  The page opens the user's ONNX file with drifttui's three
node-data files, the origin's node selected and its layers expanded, the graph coloured by the
status file (the origin pink), and the side panel names the origin with its values."""
from __future__ import annotations

import pytest

from drifttui.report.model_explorer import NAMES
from tests import model_explorer_page as me
from tests.ci.conftest import classifier_args, run_cli

pytestmark = pytest.mark.skipif(me.missing() is not None, reason=str(me.missing()))

ORIGIN_PINK = (0xFF, 0x3D, 0x9A)           # report/model_explorer.py STATUS_THRESHOLDS: 3, the origin


@pytest.fixture(scope="module")
def page(variants, tmp_path_factory):
    from tests.cdp import Tab

    folder = tmp_path_factory.mktemp("me-page")
    run = run_cli(classifier_args(variants, "flip", "--model-explorer", str(folder / "drift.json")))
    assert run.code == 1, run.err
    url = next(w for w in run.err.split() if w.startswith("http://localhost:"))
    origin = run.err.split("search box: ", 1)[1].split()[0].rstrip(",")
    with me.server() as port, Tab((1280, 800)) as tab:
        shown = me.open_link(tab, url, port)
        png = tab.screenshot(folder / "page.png")
    return origin, shown, png


def test_the_link_opens_the_graph_with_the_origin_selected(page):
    origin, shown, _ = page
    assert origin.startswith("node_") and origin in shown.rendered      # its layer was expanded to show it
    assert shown.selected == origin, (shown.selected, shown.text[:600])  # and it stayed selected
    assert shown.node_info_id() == origin                               # the side panel is about it


def test_the_side_panel_shows_the_origins_node_data(page):
    _, shown, _ = page
    values = {kind: shown.provider_values().get(name) for kind, name in NAMES.items()}
    assert values["status"] == "3", values
    assert float(values["accumulated"]) > 1                                 # over the tolerance line
    assert float(values["own"]) > 1                                         # on its own


def test_the_graph_is_coloured_by_the_status_file(page):
    """The node-data colours are drawn on the graph (the WebGL canvas, not only the side panel)."""
    from PIL import Image

    _, shown, png = page
    c = shown.canvas
    with Image.open(png) as img:
        graph = img.convert("RGB").crop((int(c["x"]), int(c["y"]), int(c["x"] + c["width"]), int(c["y"] + c["height"])))
        pink = sum(n for n, rgb in graph.getcolors(1 << 20) if max(abs(a - b) for a, b in zip(rgb, ORIGIN_PINK)) <= 8)
    assert pink > 500, pink                                                 # the origin's node, filled
