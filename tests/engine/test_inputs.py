"""Inputs reach the ONNX graph in order, or by name for a dict; files give one fixed sample."""
import numpy as np
import torch

from tests.conftest import model_spec


def test_dict_inputs_by_name(run_cache):
    r = run_cache(model=model_spec("two_inputs"), inputs=model_spec("two_inputs_dict"), samples=2)
    assert r.verdict == "ok"
    assert {L.module for L in r.layers if L.status == "ok"} >= {"a", "b"}


def test_npz_file_is_one_sample(tmp_path):
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once

    f = tmp_path / "x.npz"
    np.savez(f, np.random.randn(2, 8).astype(np.float32), np.random.randn(2, 6).astype(np.float32))
    r = run_once(Config(model=model_spec("two_inputs"), inputs=str(f), samples=50)).result
    assert r.samples == 1 and r.verdict == "ok"


def test_pt_file_dict(tmp_path):
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once

    f = tmp_path / "x.pt"
    torch.save({"left": torch.randn(2, 8), "right": torch.randn(2, 6)}, f)
    r = run_once(Config(model=model_spec("two_inputs"), inputs=str(f), samples=3)).result
    assert r.samples == 1 and r.verdict == "ok"


def test_zero_input_run(run_cache):
    r = run_cache(example="unet", zero_input=True, samples=4)
    assert r.config.zero_input
    assert r.samples == 1         # identical samples are pointless
    assert r.verdict == "ok"
