"""`--html PATH` (issue 35 item 1): one self-contained page, opened in a real headless Chromium.
The page shows the origin (headline, the profile plot's marker, the marked table row), the
per-output agreement and the drill-down; it loads nothing (no script, no URL to fetch, a CSP that
forbids both); hostile names from the model are shown as text and nothing from them runs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import browser, hostile
from tests.ci.conftest import classifier_args, run_cli

needs_chromium = pytest.mark.skipif(browser.find() is None, reason="no Chromium: apt-get install -y chromium")


@pytest.fixture(scope="module")
def flip_page(variants, tmp_path_factory) -> Path:
    page = tmp_path_factory.mktemp("html") / "report.html"
    run = run_cli(classifier_args(variants, "flip", "--fail-on", "error", "--html", str(page)))
    assert run.code == 1, run.err
    return page


def test_the_page_is_self_contained(flip_page):
    text = flip_page.read_text()
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert "<script" not in text.lower() and "<link" not in text.lower()
    assert not re.search(r"(src|href)\s*=", text, re.I)
    urls = set(re.findall(r"https?://[^\s'\"<>]+", text))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls         # the SVG namespace, never fetched


@needs_chromium
def test_chromium_shows_the_origin_the_plot_and_the_outputs(flip_page):
    dom = browser.dump_dom(flip_page)
    assert re.search(r"<span id=\"origin\">fc2</span>", dom), dom[:400]
    label = re.search(r"<text id=\"origin-label\"[^>]*>([^<]*)</text>", dom)
    assert label and label.group(1) == "◆ origin fc2"             # the plot marks it
    assert re.search(r"<tr class=\"origin\">.*?◆ fc2", dom, re.S)    # and the table row
    assert "tolerance</text>" in dom                              # the line it is measured against
    assert "top-1 agreement" in dom and "per output channel of <b>fc2</b>" in dom


@needs_chromium
def test_hostile_names_are_text_and_nothing_runs(tmp_path):
    spec, onnx_path = hostile.export_drifting(tmp_path)
    page = tmp_path / "hostile.html"
    run = run_cli(["check", spec, "--onnx", onnx_path, "--inputs", "shape:1x8", "--samples", "3",
                   "--html", str(page)])
    assert run.code == 1, run.err
    text = page.read_text()
    assert "<script>alert" not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert not re.search(hostile.CONTROL, text)
    dom = browser.dump_dom(page)
    assert "<script" not in dom and "<img" not in dom          # no element came from a name
    assert "&lt;script&gt;alert(1)" in dom                       # shown as text in the browser
    assert "\\x1b]52" in dom                                     # the escape shown visibly


def test_html_refuses_a_path_naming_an_input(variants):
    run = run_cli(classifier_args(variants, "flip", "--html", variants["flip"]))
    assert run.code == 2 and "is an input of this run" in run.err


@needs_chromium
def test_screenshot_of_the_page(flip_page, tmp_path):
    png = browser.screenshot(flip_page, tmp_path / "page.png", (1000, 800))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_a_root_origin_drill_down_names_its_own_ops_in_the_page():
    """(fourth pass) the root's drill-down is of its own ops' values, not the model's outputs."""
    from drifttui.report.html import drill
    from tests.tui.replay import load_fixture

    page = drill(load_fixture("root-drift"))
    assert "own ONNX values (Mul node_mul → mul; ReduceMean node_mean → mean" in page
    assert "per output channel" not in page and "(8 along axis last" in page


def test_a_clean_run_says_there_is_no_origin_to_drill_into():
    """(fourth new-user pass) a clean page said "no per-channel errors for the origin in this result"
    under "The origin: where in its output", as if an origin existed."""
    from drifttui.report.html import drill
    from tests.tui.replay import load_fixture

    clean = load_fixture("resnet18")
    assert clean.drift_origin is None
    page = drill(clean)
    assert "no drift origin" in page and "for the origin" not in page


@needs_chromium
def test_the_page_fits_a_narrow_window(tmp_path):
    """(fifth pass, 1280x800 and narrower) the profile plot and the channel strip were drawn at a
    fixed 1040 and 896 pixels: in an 800-pixel window the page scrolled sideways.  They scale to
    the window; the plot's ends say they hold every value past them (an exact 0 is on the bottom)."""
    from drifttui.report.html import render
    from tests.cdp import Tab
    from tests.tui.replay import load_fixture

    page = tmp_path / "report.html"
    page.write_text(render(load_fixture()), encoding="utf-8")
    with Tab((800, 800)) as tab:
        tab.open(page.as_uri())
        tab.wait("document.readyState === 'complete'")
        wide, window, svgs = tab.evaluate("[document.documentElement.scrollWidth, window.innerWidth, "
                                          "[...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().width)]")
        ticks = tab.evaluate("[...document.querySelectorAll('svg text')].map(t => t.textContent)")
    assert wide <= window and len(svgs) == 2 and max(svgs) <= window, (wide, window, svgs)
    assert "≤1e-6" in ticks and "≥1e4" in ticks and "1e0" in ticks
