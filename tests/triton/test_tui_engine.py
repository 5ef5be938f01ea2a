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


def test_a_tui_rerun_of_a_served_result_re_decides_its_capture(repo):
    """`+` in the TUI reruns the config OF THE RESULT (the served settings already applied)."""
    import dataclasses

    engine = LocalEngine()
    first = engine.run(Config(model=f"{NETS}:mlp", samples=3, triton_repo=repo("levels_basic"), triton_model="m"))
    again = engine.run(dataclasses.replace(first.config, atol=1e-3, rtol=1e-3))
    assert again.served is not None and again.served.config_fields == first.served.config_fields
    assert again.config.output_opt_level == first.config.output_opt_level == "basic"
    assert again.timings.get("capture_reused") == 1 and again.tolerance.atol == 1e-3


def test_bisect_and_tolerance_as_the_json_commands_write_them(files):
    engine = LocalEngine()
    cfg = Config(model=f"{NETS}:mlp", samples=3, onnx=files["mlp"])
    bis = engine.bisect(cfg, [files["mlp"], files["mlp"]])
    assert bis["first"] is None and [s["verdict"] for s in bis["stages"]] == ["ok", "ok"]
    assert bis["stages"][1]["vs_previous"]["compared"] and not bis["stages"][1]["vs_previous"]["fails"]
    tol = engine.tolerance(cfg)
    assert tol["advice"]["rtol"] > 0 and tol["advice"]["current"]["rtol"] == cfg.rtol
    assert {f["kind"] for f in tol["floors"]} == {"layer", "output"} and len(tol["variants"]) == 4
