"""Progress a CI log shows (issue 35 item 3): with stderr not a terminal, one line per stage with the
time since the start; in a terminal, the time left once a first sample or step has run."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from drifttui.cli_progress import ProgressPrinter
from drifttui.core.base.progress import Estimate, Progress
from tests.ci.conftest import PROGRESS_LINE, classifier_args

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _printer(tty: bool) -> tuple[ProgressPrinter, io.StringIO, Clock]:
    out, clock = io.StringIO(), Clock()
    return ProgressPrinter(True, stream=out, tty=tty, clock=clock), out, clock


def test_a_log_gets_one_line_per_stage_with_the_elapsed_time_and_no_carriage_return():
    show, out, clock = _printer(tty=False)
    show(Progress("load", message="loading the model"))
    clock.t += 2.5
    show(Progress("export", message="exporting with the dynamo exporter"))
    for i in range(1, 30):          # a sample a second: a line at the first, then every 10 s
        clock.t += 1
        show(Progress("samples", i, 30, f"sample {i}/30", eta=float(30 - i)))
    clock.t += 1
    show(Progress("done", 1, 1, "done"))
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0] == "[   0.0s] loading the model"
    assert lines[1] == "[   2.5s] exporting with the dynamo exporter"
    samples = [line for line in lines if "samples" in line]
    assert samples[0] == "[   3.5s] samples 1/30, about 30 s left"
    assert 3 <= len(samples) <= 4                     # not one per sample
    assert lines[-1] == "[  32.5s] run done: decided"


def test_a_nested_run_is_prefixed_and_names_are_escaped():
    show, out, _ = _printer(tty=False)
    show.phase("repaired copy: ")(Progress("load", message="loading the model"))
    show(Progress("step", message="causes: localising the error inside \x1b]52;c;evil\x07"))
    text = out.getvalue()
    assert "] repaired copy: loading the model" in text
    assert "\x1b" not in text and "\\x1b" in text


def test_a_counted_step_says_its_time_left_after_its_first_step():
    show, out, clock = _printer(tty=True)
    for k in range(4):
        show(Progress("step", k, 4, f"ORT optimisation level {k}"))
        clock.t += 20
    lines = out.getvalue().splitlines()
    assert lines[0] == "  ORT optimisation level 0 (1/4)"          # nothing measured yet: no guess
    assert lines[1] == "  ORT optimisation level 1 (2/4, about 60 s left)"
    assert lines[3] == "  ORT optimisation level 3 (4/4, about 20 s left)"


def test_the_terminal_rewrites_the_sample_count_in_place_with_the_time_left():
    show, out, _ = _printer(tty=True)
    show(Progress("samples", 1, 20, "sample 1/20", eta=95.0))
    show(Progress("samples", 2, 20, "sample 2/20", eta=30.0))
    show(Progress("map", message="next stage"))
    text = out.getvalue()
    assert "\r  samples 1/20, about 2 min left" in text and "\r  samples 2/20, about 30 s left" in text
    assert text.endswith("\r  next stage\n")


def test_the_estimate_waits_for_a_first_measurement():
    clock = Clock()
    est = Estimate(clock)
    assert est(Progress("samples", 0, 10, eta=5.0)) is None
    assert est(Progress("samples", 1, 10, eta=5.0)) == 5.0
    assert est(Progress("step", 0, 5)) is None
    clock.t += 3
    assert est(Progress("step", 1, 5)) == 12.0
    assert est(Progress("step", 0, 5)) is None        # the same sweep again: measured anew


def test_check_into_a_pipe_prints_each_stage_with_its_time(variants):
    """The real command, stderr a pipe (what a CI runner gives it)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("COLUMNS", None)
    p = subprocess.run([sys.executable, "-m", "drifttui", *classifier_args(variants, "flip", "--fail-on", "error")],
                       capture_output=True, text=True, env=env, cwd=str(ROOT))
    assert p.returncode == 1, p.stderr[-800:]
    lines = p.stderr.splitlines()
    assert lines and all(PROGRESS_LINE.match(line) for line in lines), p.stderr
    assert "\r" not in p.stderr
    times = [float(re.match(r"\[ *([\d.]+)s\]", line).group(1)) for line in lines]
    assert times == sorted(times)
    text = "\n".join(lines)
    for stage in ("loading the model", "mapping them to ONNX values", "samples 1/3", "run done",
                  "ORT optimisation level"):
        assert stage in text, text
    assert p.stdout.startswith("DRIFT: origin fc2")


def test_bisect_into_a_pipe_prints_each_stage_too(variants):
    """(issue 35, point 3; fourth pass) `bisect` printed its progress only on a terminal: a CI log
    got nothing until its verdict."""
    from tests.ci.conftest import INPUTS, MODEL, run_cli

    run = run_cli(["bisect", MODEL, "--inputs", INPUTS, "--samples", "3", "--stages", variants["clean"],
                   variants["flip"]])
    assert run.code == 1, run.err
    lines = run.progress.splitlines()
    first = Path(variants["clean"]).name
    assert any(f"stage 0: {first} (1/2)" in line for line in lines), run.progress
    assert any("stage 1: flip.onnx (2/2" in line for line in lines), run.progress
    assert sum("run done" in line for line in lines) >= 2 and "\r" not in run.progress
    assert "the drift first appears at stage 1" in run.out


def test_an_opaque_call_heartbeat_is_one_line_per_ten_seconds_in_a_log():
    """(fourth pass) the export was silent for 17-24 s: its heartbeats reach a log at most every
    ~10 s, with the elapsed time, never a spinner."""
    show, out, clock = _printer(tty=False)
    show(Progress("export", message="exporting net.py:Net with the dynamo exporter…"))
    for k in range(1, 13):          # a heartbeat every 2 s for 24 s
        clock.t += 2
        show(Progress("export", message="exporting net.py:Net with the dynamo exporter…", elapsed=2.0 * k))
    lines = out.getvalue().splitlines()
    assert lines[0] == "[   0.0s] exporting net.py:Net with the dynamo exporter…"
    beats = lines[1:]
    assert beats == ["[  10.0s] export: still running, 10 s", "[  20.0s] export: still running, 20 s"], lines
    assert "\r" not in out.getvalue()


def test_the_terminal_rewrites_the_heartbeat_in_place():
    show, out, _ = _printer(tty=True)
    show(Progress("export", message="exporting net.py:Net with the dynamo exporter…"))
    show(Progress("export", message="exporting …", elapsed=4.0))
    show(Progress("map", message="tracing"))
    text = out.getvalue()
    assert text.startswith("  exporting net.py:Net with the dynamo exporter…\n")
    assert "\r  export: running for 4 s" in text and text.endswith("\r  tracing\n")


def test_the_real_export_says_it_starts_and_beats_while_it_runs(tmp_path, monkeypatch):
    """The engine's export stage (a real dynamo export of the tiny classifier): a first line naming
    the model and the exporter, then heartbeats with the elapsed time until it ends, none after."""
    import time

    from drifttui.core.base import progress as progress_mod
    from drifttui.core.prepare import stage
    from drifttui.core.result import Config
    from tests.ci.conftest import INPUTS, MODEL

    seen: list[tuple[float, Progress]] = []
    real_export = stage._export

    def slow_export(*args, **kwargs):       # the tiny model exports in well under a second
        time.sleep(0.35)
        return real_export(*args, **kwargs)

    monkeypatch.setattr(stage, "_export", slow_export)
    monkeypatch.setattr(stage, "heartbeat", lambda p, s, m: progress_mod.heartbeat(p, s, m, every=0.1))
    cfg = Config(model=MODEL, inputs=INPUTS, exporter="dynamo")
    stage._load(cfg, tmp_path, lambda p: seen.append((time.monotonic(), p)), {}, [])
    export = [p for _, p in seen if p.stage == "export"]
    assert export[0].message == "exporting classifier.py:build with the dynamo exporter…" and export[0].elapsed is None
    beats = [p.elapsed for p in export[1:]]
    assert len(beats) >= 3 and beats == sorted(beats) and all(b is not None and b > 0 for b in beats)
    n = len(seen)
    time.sleep(0.3)
    assert len(seen) == n                   # the heartbeat stopped with the export


def test_the_heartbeat_is_not_swallowed_by_the_exporter_redirecting_stderr():
    """The exporter redirects sys.stderr while it runs (quiet()): the printer writes to the stderr
    it was made with, so the export's heartbeat reaches the log (it did not, in a real pipe)."""
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stderr(out):
        show = ProgressPrinter(True, tty=False)
    swallowed = io.StringIO()
    with contextlib.redirect_stderr(swallowed):
        show(Progress("export", message="exporting m.py:M with the dynamo exporter…", elapsed=10.0))
    assert "export: still running, 10 s" in out.getvalue() and not swallowed.getvalue()
