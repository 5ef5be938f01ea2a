"""Fixtures of the served-model tests: the tiny models exported once per session, and model
repositories built from tests/triton/configs/*.pbtxt in temp folders."""
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "configs"
NETS = HERE / "nets.py"


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    """{"mlp": float32 file, "mlp_fp16": its float16 conversion (float16 inputs), "bd": batch dependent}."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    from tests.triton import nets

    d = tmp_path_factory.mktemp("triton-files")
    out = {"mlp": nets.export(nets.mlp(), str(d / "mlp.onnx")),
           "bd": nets.export(nets.batch_dependent(), str(d / "bd.onnx"))}
    half = convert_float_to_float16(onnx.load(out["mlp"]), keep_io_types=False)
    onnx.save(half, str(d / "mlp_fp16.onnx"))
    out["mlp_fp16"] = str(d / "mlp_fp16.onnx")
    return out


@pytest.fixture
def repo(tmp_path, files):
    """make(config, {version: (file key, filename)}, name="m") -> the repository root."""
    def make(config: str, versions=None, name: str = "m") -> str:
        root = tmp_path / "repo"
        model = root / name
        model.mkdir(parents=True, exist_ok=True)
        if config:
            shutil.copy(CONFIGS / f"{config}.pbtxt", model / "config.pbtxt")
        for v, (key, filename) in (versions or {1: ("mlp", "model.onnx")}).items():
            target = model / str(v) / filename
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(files[key], target)
        return str(root)
    return make
