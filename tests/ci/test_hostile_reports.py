"""Issue 22, items 2, 4 and 5: the CI reports of a run whose drift origin has a hostile name
(terminal escapes, a workflow command after a line break; a neighbour named with HTML, Markdown
and table syntax). The Markdown is rendered the way GitHub renders it (raw HTML allowed, GFM
tables) and must contain no HTML or row that came from a name; the JUnit file must be
well-formed XML 1.0; the annotations must be drifttui's own commands only."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from markdown_it import MarkdownIt

from tests import hostile
from tests.ci.conftest import run_cli


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-ci")
    spec, onnx_path = hostile.export_drifting(folder)
    files = {k: folder / f"r.{k}" for k in ("md", "xml", "gitlab.json", "json")}
    run = run_cli(["check", spec, "--onnx", onnx_path, "--inputs", "shape:1x8", "--samples", "3",
                   "--markdown", str(files["md"]), "--junit", str(files["xml"]),
                   "--gitlab", str(files["gitlab.json"]), "--json", str(files["json"])], files, actions="true")
    assert run.code == 1, run.err
    return run


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def test_markdown_renders_no_html_from_a_name(reports):
    html = _html(reports.files["md"].read_text())
    for tag in ("<script", "<img", "</details><script", "<strong>bold", '<a href="https:x"'):
        assert tag not in html, tag
    assert html.count("<details>") == 1 and html.count("</details>") == 1     # drifttui's own fold
    assert "&lt;script&gt;alert(1)" in html                                   # shown as text
    assert "\x1b" not in html and "\x07" not in html and "\\x1b]52" in html


def test_markdown_table_rows_are_not_split_by_a_name(reports):
    md = reports.files["md"].read_text()
    html = _html(md)
    tables = re.findall(r"<table>.*?</table>", html, re.S)
    assert tables
    for table in tables:
        widths = {len(re.findall(r"<t[dh]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, widths           # every row as wide as the header
    layers = tables[0]
    assert layers.count("<tr>") == 1 + len([line for line in md.splitlines() if re.match(r"^\| \d+ \|", line)])
    prose = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    assert "@octocat" not in prose                # no mention from a name outside code (&#64;)


def test_junit_is_well_formed_and_shows_the_name_visibly(reports):
    text = reports.files["xml"].read_text()
    root = ET.fromstring(text)
    failure = root.find(".//testcase[@classname='drifttui.layers']/failure")
    assert failure is not None
    assert "\\x1b]52;c;cHduZWQ=\\x07" in failure.get("message")
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", text)


def test_gitlab_and_json_keep_names_exact(reports):
    issues = json.loads(reports.files["gitlab.json"].read_text())
    assert issues and all(set(i) >= {"description", "fingerprint"} for i in issues)
    data = json.loads(reports.files["json"].read_text())
    assert data["drift_origin"]["module"] == hostile.EVIL


def test_annotations_are_drifttuis_own_commands_only(reports):
    commands = [line for line in re.split(r"[\r\n]", reports.out) if line.lstrip().startswith("::")]
    assert commands
    for line in commands:
        assert re.match(r"^::(error|warning) (file=[^,:]*,)?title=drifttui", line), line
        kind, props, message = line.split(" ", 1)[0], *line.split(" ", 1)[1].split("::", 1)
        assert "::" not in props
        assert "\x1b" not in message and "%0A%3A%3Aerror" not in message
