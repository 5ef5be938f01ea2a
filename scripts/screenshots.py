"""Regenerate screenshots/*.svg (and a PNG beside each, via cairosvg) of the TUI, and
screenshots/report-html.png: the `--html` page in a real headless Chromium (apt-get install chromium),
and screenshots/model-explorer-origin.png: the `--model-explorer` link opened in Google Model Explorer
(scripts/screenshot_model_explorer.py; needs torch and drifttui[overlay], so not with --recorded).

By default the result comes from the real engine on the built-in bf16 ResNet-18 demo:
``LocalEngine().run(Config(model="example:resnet18-bf16", example="resnet18-bf16", samples=20))``,
and the step keys run the real steps.  ``--recorded`` replays tests/tui/fixtures instead
(recorded from the real engine by scripts/record_fixtures.py; no torch needed).

    .venv/bin/python scripts/screenshots.py [--recorded] [--out screenshots] [--no-png] [--browser-only]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Awaitable, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from drifttui.core.result import Config, Result  # noqa: E402
from drifttui.tui.app import DriftApp  # noqa: E402

Action = Callable[[DriftApp, object], Awaitable[None]]


async def _noop(app: DriftApp, pilot) -> None:
    return None


async def _initializers(app: DriftApp, pilot) -> None:
    result = app.table.result
    if result is None:
        return
    best = max(result.layers, key=lambda l: (len(l.initializers), -l.index))
    app.table.go_to_layer(best.index)
    await pilot.pause()


async def _steps_done(app: DriftApp, pilot) -> None:
    for _ in range(3000):              # real steps take seconds
        if not app.steps_bar.running:
            break
        await pilot.pause(0.1)
    await pilot.pause()


def _press(*keys: str) -> Action:
    async def run(app: DriftApp, pilot) -> None:
        for key in keys:
            await pilot.press(key)
            await _steps_done(app, pilot)
        await pilot.pause()
    return run


# name, terminal size, what to do before the shot
SHOTS: list[tuple[str, tuple[int, int], Action]] = [
    ("main-120x40", (120, 40), _noop),
    ("main-80x24", (80, 24), _noop),
    ("step-3", (120, 40), _press("3")),
    ("step-3-80x24", (80, 24), _press("3")),
    ("step-detail-80x24", (80, 24), _press("3", "s")),
    ("step-6", (120, 40), _press("6")),
    ("drifting-only", (120, 40), _press("f")),
    ("inspector-initializers", (120, 40), _initializers),
    ("layer-detail-80x24", (80, 24), _press("enter")),
    ("help", (100, 40), _press("question_mark")),
]


async def _root(app: DriftApp, pilot) -> None:
    app.table.go_to_layer(0)
    await pilot.pause()
    app.inspector.scroll_to(y=25, animate=False, immediate=True)     # the served part of the root's inspector
    await pilot.pause()


async def _composed(app: DriftApp, pilot) -> None:
    """Until the background composition has replaced the screen's "… in the background" line."""
    for _ in range(300):
        await pilot.pause(0.05)
        if "in the background; Esc cancels" not in getattr(app.screen, "text", ""):
            break


def _press_then(*keys: str) -> Action:
    async def run(app: DriftApp, pilot) -> None:
        for key in keys:
            await pilot.press(key)
        await _composed(app, pilot)
    return run


# the served model and the compositions, on results the real engine recorded (tests/tui/fixtures:
# scripts/record_served_fixtures.py): name, size, fixture, stages, what to do before the shot
SERVED_SHOTS: list[tuple[str, tuple[int, int], str, list[str], Action]] = [
    ("served-inspector", (120, 40), "served-live", [], _root),
    ("served-screen-100x40", (100, 40), "served-live", [], _press_then("v")),
    ("bisect-100x30", (100, 30), "resnet18", ["raw.onnx", "bn-channel.onnx"], _press_then("b")),
    ("tolerance-100x40", (100, 40), "resnet18", [], _press_then("a")),
]


async def shoot_served(out: Path, png: bool, only: set[str]) -> list[Path]:
    from tests.tui.replay import ComposeReplay

    written = []
    for name, size, fixture, stages, action in SERVED_SHOTS:
        if only and name not in only:
            continue
        engine = ComposeReplay(fixture)
        app = DriftApp(engine, result=engine.recorded, stages=stages)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await action(app, pilot)
            await pilot.pause()
            svg = out / f"{name}.svg"
            svg.write_text(app.export_screenshot(title=f"drifttui — {name}"), encoding="utf-8")
            written.append(svg)
    return written + (_pngs(written) if png else [])


def _pngs(svgs: list[Path]) -> list[Path]:
    import cairosvg

    out = []
    for svg in svgs:
        cairosvg.svg2png(url=str(svg), write_to=str(svg.with_suffix(".png")))
        out.append(svg.with_suffix(".png"))
    return out


def get_result(recorded: bool, samples: int) -> tuple[object, Result]:
    if recorded:
        from tests.tui.replay import ReplayEngine, load_fixture

        return ReplayEngine(), load_fixture().with_(steps=[])
    from drifttui.api import LocalEngine

    engine = LocalEngine()
    config = Config(model="example:resnet18-bf16", example="resnet18-bf16", samples=samples)
    return engine, engine.run(config)


async def shoot(engine, result: Result, out: Path, png: bool) -> list[Path]:
    written = []
    for name, size, action in SHOTS:
        app = DriftApp(engine, result=result)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await action(app, pilot)
            await pilot.pause()
            svg = out / f"{name}.svg"
            svg.write_text(app.export_screenshot(title=f"drifttui — {name}"), encoding="utf-8")
            written.append(svg)
    if png:
        import cairosvg

        for svg in list(written):
            target = svg.with_suffix(".png")
            cairosvg.svg2png(url=str(svg), write_to=str(target))
            written.append(target)
    return written


def html_shot(result: Result, out: Path) -> Path:
    """screenshots/report-html.png: the ``--html`` page of ``result`` in a real headless Chromium."""
    import tempfile

    from drifttui.report import html
    from tests.browser import screenshot

    with tempfile.TemporaryDirectory(prefix="drifttui-html-") as d:
        page = Path(d) / "report.html"
        page.write_text(html.render(result), encoding="utf-8")
        return screenshot(page, out / "report-html.png")


def explained(recorded: bool, result: Result) -> Result:
    """The result with its steps and verified findings, as `diagnose --html` writes it."""
    if recorded:
        from tests.tui.replay import load_fixture

        return load_fixture()
    from drifttui.core.explain.steps import STEP_NUMBERS
    from drifttui.core.pipeline import Pipeline

    engine = Pipeline()
    return engine.explain(engine.run(result.config).result, STEP_NUMBERS).result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the TUI screenshots.")
    parser.add_argument("--recorded", action="store_true", help="replay tests/tui/fixtures (no torch)")
    parser.add_argument("--out", default=str(ROOT / "screenshots"))
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--no-png", action="store_true", help="SVG only (skip cairosvg)")
    parser.add_argument("--served-only", action="store_true",
                        help="only the served-model / bisect / tolerance shots (recorded fixtures, no torch)")
    parser.add_argument("--browser-only", action="store_true",
                        help="only the shots taken in Chromium: report-html.png and model-explorer-origin.png")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.browser_only:
        for path in asyncio.run(shoot_served(out, png=not args.no_png, only=set())):
            print(path)
    if args.served_only:
        return 0
    engine, result = get_result(args.recorded, args.samples)
    if not args.browser_only:
        for path in asyncio.run(shoot(engine, result, out, png=not args.no_png)):
            print(path)
    if not args.no_png:
        print(html_shot(explained(args.recorded, result), out))
    if not args.no_png and not args.recorded:
        import screenshot_model_explorer

        print(screenshot_model_explorer.shoot(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
