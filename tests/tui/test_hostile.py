"""Issue 22, items 1 and 11 in the TUI: names from a report are untrusted. A real-engine result
whose every name, note, message and evidence string carries terminal escapes (OSC 52 clipboard
write, OSC 0 title, OSC 8 link, CSI 2J), a bidi override, a line break and Rich markup is
browsed screen by screen: nothing is parsed as markup, no control character reaches the screen
or the clipboard, and each payload is shown visibly (``\\x1b``)."""
from __future__ import annotations

import json
import re

from drifttui.core.result import Result
from drifttui.report import json_report
from drifttui.tui.app import DriftApp

from .conftest import DEMO, screen_text, settle

PAYLOAD = ("\x1b]52;c;cHduZWQ=\x07\x1b]0;TITLE\x07\x1b]8;;http://evil/\x07L\x1b]8;;\x07\x1b[2J"
           "\u202e[/b][link=http://evil]x[/link]\n::error title=pwned::x")
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# words the report schema constrains (an invalid status is refused on load, tested elsewhere)
FIXED = {"schema_version", "verdict", "status", "severity", "kind", "exporter", "opt_level", "output_opt_level",
         "ort_opt_level", "ort_output_opt_level", "layer_samples", "provider", "dtype", "example", "model",
         "onnx", "inputs"}


def _poison(value, key=""):
    if isinstance(value, dict):
        return {k: _poison(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_poison(v, key) for v in value]
    if isinstance(value, str) and key not in FIXED:
        return value + PAYLOAD
    return value


def hostile(result: Result = DEMO) -> Result:
    data = _poison(result.to_dict())
    data["config"]["model"] = "/tmp/m\x1b]0;T\x07odel.py:build"
    return Result.from_dict(data)


def _clean(text: str) -> None:
    bad = sorted({f"{ord(c):#x}" for c in CONTROL.findall(text)})
    assert not bad, f"control characters reach the terminal: {bad}"


async def test_a_hostile_report_renders_visibly_on_every_screen(tmp_path):
    path = tmp_path / "hostile.json"
    path.write_text(json_report.dumps(hostile()))
    result = json_report.read(str(path))            # the report loads: names are data, kept exact
    assert PAYLOAD in result.layers[result.drift_origin.layer].module
    app = DriftApp(None, result=result)
    copied: list[str] = []
    app.copy_to_clipboard = copied.append           # type: ignore[method-assign]
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        main = screen_text(app)
        _clean(main)
        assert "\\x1b]52;c;cHduZWQ=\\x07" in main and "[/b]" in main
        _clean(app.inspector.text)
        for key in ("c", "Y", "y"):                 # copy module / node names / fix
            await pilot.press(key)
            await pilot.pause()
        assert len(copied) == 3
        for text in copied:
            _clean(text)
        assert "\\x1b]52" in copied[0]
        _clean(screen_text(app))                     # the "copied ..." notifications
        await pilot.press("enter")                   # the layer detail (crashed on [/b])
        await pilot.pause()
        _clean(screen_text(app))
        _clean(app.screen.text)
        assert "[link=http://evil]" in app.screen.text
        await pilot.press("c")
        await pilot.pause()
        _clean(copied[-1])
        await pilot.press("escape", "3")             # a step's bar and its full detail
        await pilot.pause()
        _clean(screen_text(app))
        await pilot.press("s")
        await pilot.pause()
        _clean(screen_text(app))
        _clean(app.screen.text)
        await pilot.press("escape")
        await pilot.pause()
        assert app.return_code is None               # still running: nothing crashed


async def test_markup_like_names_are_literal_in_the_table_and_the_detail():
    data = DEMO.to_dict()
    origin = data["drift_origin"]["layer"]
    data["layers"][origin]["module"] = "enc[/b]"
    data["layers"][origin]["class"] = "[link=http://x]y"
    result = Result.from_dict(json.loads(json.dumps(data)))
    app = DriftApp(None, result=result)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert "enc[/b]" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert "enc[/b]" in screen_text(app) and "[link=http://x]y" in screen_text(app)
