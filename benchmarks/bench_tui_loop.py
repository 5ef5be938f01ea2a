"""The debugger's loop with the real engine: first paint, `+`/`-` to the redrawn table, `d` to a partial.

Runs the TUI headless (``App.run_test``) on the demo (``resnet18-bf16``, 20 samples) with
``drifttui.api.LocalEngine``, and measures, wall clock from the key press (Pilot) to the moment
the app has applied the new result to the layer table and painted it:

* first paint: app start until the first screen is composed and painted (before any result);
* first result: app start until the first run's result is in the table;
* tolerance ``+`` / ``-``: key to redrawn table (the engine re-decides the last capture: no capture);
* determinism ``d``: key to the first partial result in the table, and to the full result
  (a new capture on the same export: ``timings["export"] == 0``).

Prints medians over ``--repeats`` presses. Goals: a tolerance change well under 100 ms of engine
time and well under a second on screen; no export on any toggle.

    .venv/bin/python benchmarks/bench_tui_loop.py [--example resnet18-bf16] [--samples 20] [--repeats 5]
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

from drifttui.api import LocalEngine  # noqa: E402
from drifttui.core.result import Config  # noqa: E402
from drifttui.tui.app import DriftApp  # noqa: E402


class TimedApp(DriftApp):
    """Records when a partial or a final result reached the table."""

    CSS_PATH = str(Path(sys.modules[DriftApp.__module__].__file__).with_name("app.tcss"))

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.events: list[tuple[str, float, object]] = []

    def on_run_progress(self, message) -> None:
        super().on_run_progress(message)
        if message.progress.partial is not None and message.token is self._token:
            self.events.append(("partial", time.perf_counter(), message.progress.partial))

    def on_run_done(self, message) -> None:
        super().on_run_done(message)
        if message.token is self._token:
            self.events.append(("done", time.perf_counter(), message.result))


async def _wait(app: TimedApp, pilot, kinds: str, after: int, timeout: float = 600.0) -> tuple[float, str, object]:
    """The first event of one of ``kinds`` (space-separated) after event ``after``: (time, kind, result)."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        for k, t, r in app.events[after:]:
            if k in kinds.split():
                await pilot.pause()          # let the table repaint
                return time.perf_counter(), k, r
        await asyncio.sleep(0.002)
    raise SystemExit(f"no {kinds} within {timeout} s")


async def bench(example: str, samples: int, repeats: int) -> dict:
    cfg = Config(model=f"example:{example}", example=example, samples=samples)
    app = TimedApp(engine=LocalEngine(), config=cfg)
    out: dict[str, list[float]] = {"tolerance": [], "tolerance_engine": [], "d_partial": [], "d_done": [],
                                   "d_export": [], "d_cached": []}
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        out["first_paint"] = [time.perf_counter() - t0]
        t, _, r = await _wait(app, pilot, "done", 0)
        out["first_result"] = [t - t0]
        for k in range(repeats):
            for key in ("plus", "minus"):
                n = len(app.events)
                start = time.perf_counter()
                await pilot.press(key)
                t, _, r = await _wait(app, pilot, "done", n)
                assert app.table.result is r
                assert r.timings["capture_reused"] == 1 and r.timings["export"] == 0, r.timings
                out["tolerance"].append(t - start)
                out["tolerance_engine"].append(r.timings["decide"])
            if k < max(1, repeats // 2):
                # every other press toggles back to a configuration whose capture is kept: that one
                # only re-decides (no partial result comes: it is done at once)
                n = len(app.events)
                start = time.perf_counter()
                await pilot.press("d")
                t, kind, _ = await _wait(app, pilot, "partial done", n)
                if kind == "partial":
                    out["d_partial"].append(t - start)
                    t, _, r = await _wait(app, pilot, "done", n)
                    out["d_done"].append(t - start)
                else:
                    r = app.events[-1][2]
                    out["d_cached"].append(t - start)
                out["d_export"].append(r.timings["export"])
    return {k: statistics.median(v) for k, v in out.items() if v}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--example", default="resnet18-bf16")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"nproc {os.cpu_count()}, load average {os.getloadavg()}")
    r = asyncio.run(bench(args.example, args.samples, args.repeats))
    print(f"{args.example}, {args.samples} samples (medians):")
    print(f"  first paint {r['first_paint'] * 1e3:.0f} ms; first result {r['first_result']:.2f} s")
    print(f"  + / - to the redrawn table: {r['tolerance'] * 1e3:.0f} ms (engine: decide "
          f"{r['tolerance_engine'] * 1e3:.1f} ms; no capture, no export)")
    print(f"  d to the first partial result: {r['d_partial'] * 1e3:.0f} ms; to the full result "
          f"{r['d_done']:.2f} s; export {r['d_export']:.1f} s")
    if "d_cached" in r:
        print(f"  d back to a kept capture (re-decided only): {r['d_cached'] * 1e3:.0f} ms")
    ok = r["tolerance_engine"] < 0.1 and r["tolerance"] < 1.0 and r["d_export"] == 0
    print("goals met" if ok else "SOME GOALS NOT MET")


if __name__ == "__main__":
    main()
