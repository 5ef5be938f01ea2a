"""The TUI's engine (drifttui.api.LocalEngine) on the real engine: a served config runs the served
comparison (as `check` does), and the compositions the TUI's `b` and `a` keys show come back as the
dicts `bisect --json` / `tolerance --json` write."""
from drifttui.api import LocalEngine
from drifttui.core.result import Config
from tests.triton.conftest import NETS


def test_a_served_config_runs_the_served_comparison(repo):
    root = repo("params")
    result = LocalEngine().run(Config(model=f"{NETS}:mlp", samples=3, triton_repo=root, triton_model="m",
                                      batch_sweep=(1, 4)))
    assert result.served is not None and result.served.source == "repository"
    assert result.served.config_fields and result.served.file.endswith("model.onnx")
    assert result.batch_sweep is not None and result.batch_sweep.invariant
    assert result.timings["batch_sweep"] > 0          # the served run's cost, shown by the TUI


def test_bisect_and_tolerance_as_the_json_commands_write_them(files):
    engine = LocalEngine()
    cfg = Config(model=f"{NETS}:mlp", samples=3, onnx=files["mlp"])
    bis = engine.bisect(cfg, [files["mlp"], files["mlp"]])
    assert bis["first"] is None and [s["verdict"] for s in bis["stages"]] == ["ok", "ok"]
    assert bis["stages"][1]["vs_previous"]["compared"] and not bis["stages"][1]["vs_previous"]["fails"]
    tol = engine.tolerance(cfg)
    assert tol["advice"]["rtol"] > 0 and tol["advice"]["current"]["rtol"] == cfg.rtol
    assert {f["kind"] for f in tol["floors"]} == {"layer", "output"} and len(tol["variants"]) == 4
