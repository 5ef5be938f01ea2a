"""Benchmark the layer table on a 10,000-call result (the recorded real demo result, tiled).

Measures time to first paint (app start until the table is mounted and rendered) and
the cost of one key in-process, for down ×200, page down, collapse/expand of a stage holding
thousands of rows, the drifting-only filter and typing a name filter.  A key's *full frame*
is: the key's action, the inspector update it causes, Textual's own screen update (a layout
only where something asked for one, then the dirty regions: ``Screen._on_timer_update``)
and a full composite of every line of the screen (a whole repaint).  ``--forced-layout``
also prints the older, stricter bound (a forced layout of the whole screen per key).  Also
prints the Pilot round trip for `down` and for an unbound key (Pilot's own waiting).  Prints
medians of wall time and of this process's CPU time (CPU time is what a shared, loaded
machine distorts least); goal < 16 ms a key.

    .venv/bin/python benchmarks/bench_layer_table.py [--layers 10000] [--size 120x40]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")


from tests.tui.replay import load_fixture, tiled  # noqa: E402
from drifttui.tui.app import DriftApp  # noqa: E402


def ms(seconds: float) -> float:
    return seconds * 1000.0


async def timed_presses(pilot, keys: list[str]) -> list[float]:
    """Pilot round trip per key (includes Pilot's own idle waiting)."""
    out = []
    for key in keys:
        start = time.perf_counter()
        await pilot.press(key)
        out.append(ms(time.perf_counter() - start))
    return out


CPU: dict[str, list[float]] = {}
FORCED = False


def frame(app, action, name: str = "") -> float:
    """In-process cost of one key's full frame: the action, the inspector update it causes,
    Textual's own screen update (layout where asked for, dirty regions) and a full composite
    of every line.  With FORCED, a layout of the whole screen is forced too (the old bound)."""
    start, cpu = time.perf_counter(), time.process_time()
    action()
    table = app.table
    app.inspector.show(table.result, table.cursor_layer)
    if FORCED:
        app.screen._refresh_layout(app.size)
    app.screen._on_timer_update()
    app.screen._compositor.render_update(full=True)
    CPU.setdefault(name, []).append(ms(time.process_time() - cpu))
    return ms(time.perf_counter() - start)


async def bench(n_layers: int, size: tuple[int, int], repeats: int) -> dict[str, float]:
    base = load_fixture()
    result = tiled(base, -(-n_layers // (len(base.layers) - 1)))
    n_layers = len(result.layers)
    names = ("first_paint", "pilot_noop", "pilot_down", "down_handler", "down", "pagedown", "collapse", "expand",
             "only_drift", "filter_text")
    figures: dict[str, list[float]] = {k: [] for k in names}
    for _ in range(repeats):
        start = time.perf_counter()
        app = DriftApp(None, result=result)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            figures["first_paint"].append(ms(time.perf_counter() - start))
            table = app.table
            assert len(table.layer_tree.rows) == n_layers
            figures["pilot_noop"] += await timed_presses(pilot, ["f12"] * 20)
            figures["pilot_down"] += await timed_presses(pilot, ["down"] * 50)
            table.action_first()
            for _ in range(200):
                start = time.perf_counter()
                table.action_cursor(1)
                app.inspector.show(table.result, table.cursor_layer)
                figures["down_handler"].append(ms(time.perf_counter() - start))
            table.action_first()
            figures["down"] += [frame(app, lambda: table.action_cursor(1), "down") for _ in range(200)]
            figures["pagedown"] += [frame(app, lambda: table.action_page(1), "pagedown") for _ in range(20)]
            stage = max((i for i, l in enumerate(result.layers) if l.depth == 1),
                        key=lambda i: len(table.layer_tree.children[i]))
            for _ in range(5):
                table.go_to_layer(stage)
                figures["collapse"].append(frame(app, table.action_collapse, "collapse"))
                figures["expand"].append(frame(app, table.action_expand, "expand"))
            for flag in (True, False) * 2:
                figures["only_drift"].append(frame(app, lambda: table.set_filter(only_drift=flag), "only_drift"))
            for text in ("r", "re", "rel", "relu", ""):
                figures["filter_text"].append(frame(app, lambda: table.set_filter(text=text), "filter_text"))
            await pilot.pause()
    out = {k: statistics.median(v) for k, v in figures.items() if v}
    out["down_p95"] = sorted(figures["down"])[int(len(figures["down"]) * 0.95)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=10_000)
    parser.add_argument("--size", default="120x40")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--forced-layout", action="store_true",
                        help="force a layout of the whole screen on every key (the older, stricter bound)")
    args = parser.parse_args(argv)
    global FORCED
    FORCED = args.forced_layout
    w, h = (int(x) for x in args.size.split("x"))
    figures = asyncio.run(bench(args.layers, (w, h), args.repeats))
    print(f"layer table, {args.layers} module calls, {w}x{h}, median of {args.repeats} runs"
          + (" (forced layout per key)" if FORCED else ""))
    labels = {
        "first_paint": "time to first paint",
        "down_handler": "key: down, handler+inspector",
        "down": "key: down (x200), in-process",
        "down_p95": "key: down p95, in-process",
        "pagedown": "key: page down, in-process",
        "collapse": "key: collapse a stage",
        "expand": "key: expand a stage",
        "only_drift": "key: f (only drifting)",
        "filter_text": "filter keystroke (/relu)",
        "pilot_down": "Pilot round trip: down",
        "pilot_noop": "Pilot round trip: unbound key",
    }
    for key, label in labels.items():
        if key in figures:
            cpu = f"   cpu {statistics.median(CPU[key]):7.2f} ms" if key in CPU else ""
            print(f"  {label:34s} {figures[key]:8.2f} ms{cpu}")
    keys = [figures[k] for k in ("down", "pagedown", "collapse", "expand")]
    verdict = "OK" if max(keys) < 16 else "SLOW"
    print(f"  per-key goal < 16 ms (in-process full frame, wall): {verdict} "
          f"(worst median {max(keys):.2f} ms)")
    print("  (the Pilot round trip includes Pilot's own idle waits; compare with the unbound key)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
