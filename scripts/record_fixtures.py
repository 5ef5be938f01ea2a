"""Record the TUI's test fixtures from the REAL engine (torch + ONNX Runtime).

For each built-in example below it runs a capture, the six debugging steps and the drift
checks (``drifttui diagnose``), and writes into ``tests/tui/fixtures/``:

* ``<name>.json``          the finished result as a JSON report (steps and findings included);
* ``<name>.partial.json``  (some) the partial result the engine reported after its first sample;
* ``<name>.every-sample.json`` (some) the origin's per-channel and per-sample errors over every
  sample (``Pipeline.drill(every_sample=True)``, the drill-down's ``a``);
* the served model's and the compositions' fixtures (``served-*.json``, ``compose-*.json``:
  scripts/record_served_fixtures.py; ``served-live`` needs the PyTriton server venv, ``make triton-server``).

and, after a full recording, ``ENGINE``: the fingerprint of the engine's sources that recorded them
(``tests/tui/test_fixtures.py`` fails when the engine has changed since).  The TUI tests, the
snapshot tests and ``tests.tui.replay.ReplayEngine`` read these; rerun this script (``make
fixtures``) after a change to the engine or the report format:

    .venv/bin/python scripts/record_fixtures.py [--out tests/tui/fixtures] [--only NAME]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURE_DIR = ROOT / "tests" / "tui" / "fixtures"

# name -> (example, samples, diagnose?, keep the first partial result?)
FIXTURES = {
    "resnet18-bf16": ("resnet18-bf16", 8, True, True),
    "transformer-ln-eps": ("transformer-ln-eps", 6, True, False),
    "resnet18": ("resnet18", 4, False, False),
    # the clean ResNet with ONE BatchNorm channel changed in its ONNX file (the drill-down's case)
    "resnet18-bn-channel": ("resnet18", 4, False, False),
    # a drift in the ROOT module's own ops (scripts/fixture_models/root_drift.py): a root origin
    "root-drift": ("", 4, True, False),
}
from scripts.record_served_fixtures import NAMES as SERVED, record as record_served  # noqa: E402

USER_ONNX = {"resnet18-bn-channel": "export_bn_channel_drift"}     # fixtures run on an edited export
# fixtures whose origin is also compared on every sample (the drill-down's `a`): <name>.every-sample.json
EVERY_SAMPLE = ("resnet18-bf16", "resnet18-bn-channel")


def _dump(result, path: Path) -> None:
    from drifttui.report.outputs import write_atomic

    data = result.to_dict()
    data["timings"] = {k: round(v, 2) for k, v in data.get("timings", {}).items()}
    write_atomic(str(path), json.dumps(data, separators=(",", ":")) + "\n", "fixture")


def _dump_every_sample(engine, result, path: Path) -> None:
    """The origin's Channels over every sample (``Pipeline.drill(every_sample=True)``)."""
    from drifttui.core.result.codec import to_json
    from drifttui.report.outputs import write_atomic

    layer = result.drift_origin.layer
    channels = engine.drill(layer, result, every_sample=True)
    write_atomic(str(path), json.dumps({"layer": layer, "channels": to_json(channels)},
                                       separators=(",", ":")) + "\n", "fixture")


def _root_drift_config(samples: int):
    import tempfile

    from drifttui.core.result import Config

    sys.path.insert(0, str(ROOT / "scripts" / "fixture_models"))
    from root_drift import INPUT, export_root_drift

    onnx_path = export_root_drift(Path(tempfile.mkdtemp(prefix="drifttui-fixture-")))
    model = ROOT / "scripts" / "fixture_models" / "root_drift.py"
    return Config(model=f"{model.relative_to(ROOT)}:build", onnx=str(onnx_path), inputs=INPUT, samples=samples)


def record(name: str, out: Path) -> None:
    from drifttui.core.base.progress import Progress
    from drifttui.core.result import Config
    from drifttui.core.explain.steps import STEP_NUMBERS
    from drifttui.core.pipeline import Pipeline

    example, samples, with_steps, keep_partial = FIXTURES[name]
    config = Config(model=f"example:{example}", example=example, samples=samples)
    if name in USER_ONNX:
        import tempfile

        import drifttui.core.model.examples as examples

        workdir = tempfile.mkdtemp(prefix="drifttui-fixture-")
        onnx_path = getattr(examples, USER_ONNX[name])(Path(workdir))
        config = Config(model=f"example:{example}", example=example, samples=samples, onnx=str(onnx_path))
    if name == "root-drift":
        config = _root_drift_config(samples)
    partials = []

    def progress(p: Progress) -> None:
        if p.partial is not None and not partials:
            partials.append(p.partial)

    start = time.monotonic()
    engine = Pipeline()
    result = engine.run(config, progress=progress).result
    if with_steps:
        result = engine.explain(result, STEP_NUMBERS).result
    _dump(result, out / f"{name}.json")
    if partials and keep_partial:
        _dump(partials[0], out / f"{name}.partial.json")
    if name in EVERY_SAMPLE and result.drift_origin is not None:
        _dump_every_sample(engine, result, out / f"{name}.every-sample.json")
    print(f"{name}: {len(result.layers)} layers, {len(result.steps)} steps, {len(result.findings)} findings, "
          f"{time.monotonic() - start:.1f}s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record the TUI fixtures from the real engine.")
    parser.add_argument("--out", default=str(FIXTURE_DIR))
    parser.add_argument("--only", choices=sorted(FIXTURES) + list(SERVED), action="append")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.chdir(ROOT)                  # the root-drift fixture names its model file relative to the repository
    for name in args.only or [*FIXTURES, *SERVED]:
        if name in SERVED:       # the served model and the compositions (scripts/record_served_fixtures.py)
            print(record_served(name, out), flush=True)
        else:
            record(name, out)
    if not args.only and out == FIXTURE_DIR:
        from tests.tui.replay import ENGINE_STAMP, engine_fingerprint

        ENGINE_STAMP.write_text(engine_fingerprint() + "\n")     # tests/tui/test_fixtures.py reads it
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
