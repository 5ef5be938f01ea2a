"""The served-model and composition fixtures of the TUI, recorded from the REAL engine
(scripts/record_fixtures.py calls these; see there):

* ``served-repo.json``      a Triton model repository run (no server): tests/triton/nets.py's MLP
                            under tests/triton/configs/accelerators.pbtxt (TensorRT FP16, OpenVINO,
                            a GPU instance: not reproducible here) with ``--batch-sweep 1,4``;
* ``served-live.json``      the batch-dependent model (tests/triton/nets.py:batch_dependent) served by a
                            real PyTriton server with dynamic batching, 100 samples: served ≠ file,
                            batch dependence.  Needs the server venv (``make triton-server`` or
                            DRIFTTUI_TRITON_PYTHON); without it the recorded file is kept, and said;
* ``compose-bisect.json``   ``drifttui bisect`` on the ResNet example: its raw export, then the same file
                            with one BatchNorm channel changed (the dict ``bisect --json`` writes);
* ``compose-tolerance.json`` ``drifttui tolerance`` on the ResNet example (the dict ``tolerance --json`` writes).

Temp folders in the recorded text are replaced by ``/tmp/drifttui-fixture`` (the same bytes on every
recording, no machine's path in the repository)."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETS = "tests/triton/nets.py"
TMP = "/tmp/drifttui-fixture"
NAMES = ("served-repo", "served-live", "compose-bisect", "compose-tolerance")


def _write(data: dict, path: Path, work: Path) -> None:
    from drifttui.core.result.codec import clean
    from drifttui.report.outputs import write_atomic

    text = json.dumps(clean(data), separators=(",", ":"), default=str).replace(str(work), TMP)
    write_atomic(str(path), text + "\n", "fixture")


def _result(result, path: Path, work: Path) -> None:
    data = result.to_dict()
    data["timings"] = {k: round(v, 2) for k, v in data.get("timings", {}).items()}
    _write(data, path, work)


def served_repo(out: Path, work: Path) -> str:
    from drifttui.core.compose import served
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from tests.triton import nets

    model = work / "repo" / "m"
    (model / "1").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "triton" / "configs" / "accelerators.pbtxt", model / "config.pbtxt")
    nets.export(nets.mlp(), str(model / "1" / "model.onnx"))
    cfg = Config(model=f"{NETS}:mlp", samples=8, triton_repo=str(work / "repo"), triton_model="m", batch_sweep=(1, 4))
    result = served.run(Pipeline(), cfg)
    _result(result, out / "served-repo.json", work)
    return f"served-repo: {len(result.served.config_fields)} config fields, sweep invariant {result.batch_sweep.invariant}"


def served_live(out: Path, work: Path) -> str:
    from drifttui.core.compose import served
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from tests.triton import nets
    from tests.triton.server import server_python, serving

    py, why = server_python()
    if py is None:
        return f"served-live: kept the recorded file ({why})"
    onnx_file = nets.export(nets.batch_dependent(), str(work / "bd.onnx"))
    with serving(onnx_file, "bd", work) as urls:
        cfg = Config(model=f"{NETS}:batch_dependent", onnx=onnx_file, samples=100, triton_url=urls[0],
                     triton_model="bd")
        result = served.run(Pipeline(), cfg)
    url = urls[0]
    data = result.to_dict()
    data["timings"] = {k: round(v, 2) for k, v in data.get("timings", {}).items()}
    text = json.dumps(data).replace(url, "http://127.0.0.1:8000")     # the port is a free one each time
    _write(json.loads(text), out / "served-live.json", work)
    return f"served-live: {result.served.verdict} ({result.served.reason})"


def compose_bisect(out: Path, work: Path) -> str:
    from drifttui.core.compose.stage_bisect import bisect_stages
    from drifttui.core.model.examples import export_bn_channel_drift
    from drifttui.core.result import Config

    edited = export_bn_channel_drift(work)
    raw = next(p for p in work.glob("*.onnx") if p != edited)
    stages = [work / "raw.onnx", work / "bn-channel.onnx"]
    raw.rename(stages[0])
    res = bisect_stages(Config(model="example:resnet18", example="resnet18", samples=4), [str(s) for s in stages])
    _write(res.to_dict(), out / "compose-bisect.json", work)
    return f"compose-bisect: first stage {res.first}, origin {res.origin}"


def compose_tolerance(out: Path, work: Path) -> str:
    from drifttui.core.compose.noise_floor import measure
    from drifttui.core.compose.tolerance_advice import advise, report
    from drifttui.core.result import Config

    nf = measure(Config(model="example:resnet18", example="resnet18", samples=4))
    adv = advise(nf)
    _write(report(nf, adv), out / "compose-tolerance.json", work)
    return f"compose-tolerance: atol {adv.atol:g}, rtol {adv.rtol:g}"


def record(name: str, out: Path) -> str:
    work = Path(tempfile.mkdtemp(prefix="drifttui-fixture-"))
    try:
        return {"served-repo": served_repo, "served-live": served_live, "compose-bisect": compose_bisect,
                "compose-tolerance": compose_tolerance}[name](out, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
