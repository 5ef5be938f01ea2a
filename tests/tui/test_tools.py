"""Detail screens, the command palette, help, copying, saving, sorting, searching, themes
and NO_COLOR, on the result recorded from the real engine."""
from __future__ import annotations

import json

from drifttui.core.result import Result
from tests.tui.replay import ReplayEngine
from drifttui.tui.app import DriftApp
from drifttui.tui.keymap import ACTIONS, COLUMN_HELP, STATUS_HELP
from drifttui.tui.screens.detail import DetailScreen
from drifttui.tui.screens.help import HelpScreen
from drifttui.core.result import STATUSES

from .conftest import DEMO, screen_text, settle, wait_until


async def test_layer_detail_has_every_number_and_attribute():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")                 # the cursor starts on the origin
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        text = app.screen.text
        origin = DEMO.layers[DEMO.drift_origin.layer]
        m = origin.metrics
        assert f"Metrics over {m.samples} samples" in text and "Histogram of per-sample max abs" in text
        assert "1e-1..1e0" in text and "rmse" in text and "threshold" in text
        for node in origin.nodes:
            for key, value in node.attributes.items():
                assert f"{key} = {value}" in text
        joined = text.replace("\n", "").replace(" ", "")
        for init in origin.initializers:
            assert init.name in joined and "Δtorch" in joined
        assert "…" not in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen)


async def test_step_detail_shows_summary_evidence_table_verification_and_fix():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        step = next(s for s in DEMO.steps if s.step == 3)
        bar_text = screen_text(app)
        assert "→ fix:" in bar_text and step.suggestion.split()[0] in bar_text     # fix visible at 80x24
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        text = " ".join(app.screen.text.split())
        assert " ".join(step.summary.split()) in text and " ".join(step.suggestion.split()) in text
        assert "nodes (1)" in text and "kernel_shape: [3, 3]" in text
        assert "{'" not in text and "[{" not in text                 # no Python/JSON repr
        assert "headline cause" in text and "verification:" in text


async def test_verified_finding_with_patch_is_rendered():
    f = DEMO.findings[0]
    patched = DEMO.with_(findings=[f.__class__(**{**f.__dict__, "verified": True, "kind": "export",
                                                  "patch": {"initializer": "layer3.1.conv1.weight",
                                                            "restore": "float32 torch values"},
                                                  "local_before": 0.1215, "local_after": 3e-6})])
    app = DriftApp(None, result=patched)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3", "s")
        await pilot.pause()
        text = " ".join(app.screen.text.split())
        assert "verification: verified" in text and "kind export" in text
        assert "before 0.1215 → after 3e-06" in text and "restore float32 torch values" in text


async def test_every_action_is_in_the_palette_with_its_key():
    engine = ReplayEngine()
    app = DriftApp(engine, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for a in ACTIONS:
            if a.action and a.action != "command_palette":
                assert f"{a.title}  ({a.shown})" in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"determinism")
        await pilot.pause(0.5)
        assert "Determinism" in screen_text(app) and "(d)" in screen_text(app)
        await pilot.press("enter")                 # runs it: a rerun with determinism on
        await wait_until(pilot, lambda: engine.configs)
        await settle(app, pilot)
        assert engine.configs[-1].deterministic and app.result.config.deterministic


async def test_palette_reaches_table_actions():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"collapse all")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert all(DEMO.layers[i].depth <= 1 for i in app.table.layer_tree.rows)


def test_docs_key_table_matches_the_keymap():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "tui.md").read_text()
    for a in ACTIONS:
        if not a.action.startswith("step("):
            assert a.help.replace("|", "\\|") in doc, a.help
    for status, what in STATUS_HELP:
        assert what in doc


async def test_help_explains_every_status_and_column():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
    assert {s for s, _ in STATUS_HELP} == set(STATUSES)
    assert {c for c, _ in COLUMN_HELP} >= {"abs", "rel", "local", "1-cos"}


async def test_copy_module_node_and_fix():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("c")
        assert app.clipboard == "layer3.1.bn1"
        await pilot.press("Y")
        assert app.clipboard == "node_Conv_317"
        await pilot.press("y")                         # no step shown: the headline's fix
        assert app.clipboard == DEMO.headline.fix
        await pilot.press("home", "c")
        assert app.clipboard == "(root)"


async def test_save_json_and_svg_atomically_and_refuse_bad_paths(tmp_path):
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+s")
        await pilot.pause()
        box = app.screen.query_one("#prompt-input")
        box.value = str(tmp_path / "r.json")
        await pilot.press("enter")
        await pilot.pause()
        saved = Result.from_dict(json.loads((tmp_path / "r.json").read_text()))
        assert saved.drift_origin == DEMO.drift_origin and len(saved.steps) == 6
        await pilot.press("ctrl+t")
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = str(tmp_path / "s.svg")
        await pilot.press("enter")
        await wait_until(pilot, lambda: (tmp_path / "s.svg").exists())
        assert (tmp_path / "s.svg").read_text().startswith("<svg")
        await pilot.press("ctrl+s")
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = str(tmp_path / "missing" / "r.json")
        await pilot.press("enter")
        await pilot.pause()
        assert not (tmp_path / "missing").exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "s.svg"]    # no temp files left


async def test_sort_worst_local_first_and_search_next_previous():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("w")
        await pilot.pause()
        assert app.table.layer_tree.sort == "local" and "local▼" in screen_text(app)
        await pilot.press("home")
        await pilot.press("ctrl+f")
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = "bn2"
        await pilot.press("enter")
        await pilot.pause()
        first = app.table.cursor_layer
        assert "bn2" in DEMO.layers[first].module
        await pilot.press("right_square_bracket")
        second = app.table.cursor_layer
        assert second != first and "bn2" in DEMO.layers[second].module
        await pilot.press("left_square_bracket")
        assert app.table.cursor_layer == first


async def test_light_theme_toggle():
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("T")
        assert app.theme == "textual-light"
        await pilot.press("T")
        assert app.theme == "textual-dark"


async def test_no_color_failing_cells_bold_reverse_never_dimmer(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = DriftApp(None, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down")             # cursor off the origin row
        await pilot.pause()
        assert app.no_color
        table = app.table
        origin_row = table.layer_tree.row_of(DEMO.drift_origin.layer)
        strip = table.render_line(origin_row - round(table.scroll_y) + 1)
        cells = [seg for seg in strip if seg.style is not None and "e-0" in seg.text]
        failing = [seg for seg in cells if seg.text[0] in "▓█"]
        passing = [seg for seg in cells if seg.text[0] not in "▓█"]
        assert failing and all(seg.style.bold and seg.style.reverse for seg in failing)
        assert all(not seg.style.dim for seg in failing)
        assert all(not seg.style.reverse for seg in passing)


async def test_replay_engine_step_runs_through_the_app():
    engine = ReplayEngine()
    app = DriftApp(engine, result=DEMO.with_(steps=[]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await settle(app, pilot)
        recorded = next(st for st in DEMO.steps if st.step == 6)      # what the real engine said
        assert engine.steps_run == [6] and app.steps_bar.steps[6].verdict == recorded.verdict


async def test_unattributed_status_and_run_notes_are_shown():
    import dataclasses

    from drifttui.core.result import UNATTRIBUTED

    note = "observer effect: marking values as outputs changed ORT's result at layer4.0.bn2"
    layers = [dataclasses.replace(l, status=UNATTRIBUTED, note="float32 noise upstream flips a rounding")
              if l.module == "layer4.0.bn2" else l for l in DEMO.layers]
    app = DriftApp(None, result=DEMO.with_(layers=layers, notes=[note]))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "⚠ observer effect" in screen_text(app)
        target = next(l.index for l in layers if l.module == "layer4.0.bn2")
        app.table.go_to_layer(target)
        await pilot.pause()
        assert "unattributed" in screen_text(app) and "float32 noise upstream" in app.inspector.text
        await pilot.press("home")
        await pilot.pause()
        assert "Run notes" in app.inspector.text and note in " ".join(app.inspector.text.split())


async def test_main_keys_do_nothing_over_other_screens():
    engine = ReplayEngine()
    app = DriftApp(engine, result=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark", "d", "enter")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen) and not engine.configs     # no rerun behind the help
        await pilot.press("escape", "enter")                                 # layer detail
        await pilot.pause()
        await pilot.press("enter", "3")
        await pilot.pause()
        assert len(app.screen_stack) == 2 and not engine.steps_run           # no stacked detail, no step
        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen_stack) == 1


def test_histogram_bar_sits_at_its_real_bin():
    from drifttui.tui.layer_view import histogram_line

    hist = [0] * 12
    hist[9] = 8                                    # every sample in 1e-1..1e0
    text = histogram_line(hist).plain
    assert text[:12] == "·" * 9 + "█" + "··" and "worst in 1e-1..1e0" in text
    hist[2] = 4
    assert histogram_line(hist).plain[2] not in "· "
