"""A module whose output the exporter absorbed into a model output.  SqueezeBERT's last LayerNorm works in
(B, C, L): it permutes, normalises and permutes back, and the encoder permutes its result to (B, L, C) once more.
Both exporters cancel the two Transposes: the norm's output has no ONNX value, the value its nodes hand on is the
model output (read by the pooler too) in another layout.  The absorbed-view rule (plan/absorbed.py) left model
outputs out, so the norm and its container stayed unmapped, and a drift in the norm's own weight could not be named
there.  Seen through the permutation, the norm is compared, and its weight named."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from torch import nn

from drifttui.core.pipeline import run_once
from drifttui.core.result import Config
from tests.models import off_identity

SPEC = f"{__file__}:channels_first"
INPUTS = "shape:2x6x16"


class ChannelNorm(nn.LayerNorm):
    """A LayerNorm over dim 1 of (B, C, L), as SqueezeBERT's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 1)).permute(0, 2, 1)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(16, 16, 1)
        self.norm = ChannelNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + torch.tanh(self.conv(x)))


class ChannelsFirst(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.block(x.permute(0, 2, 1)).permute(0, 2, 1)     # back to (B, L, C): the file has no (B, C, L) value
        return h, self.head(h[:, 0])


def channels_first() -> nn.Module:
    return off_identity(ChannelsFirst)


@pytest.fixture(scope="module", params=["torchscript", "dynamo"])
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chf") / f"chf_{request.param}.onnx"
    x = torch.randn(2, 6, 16)
    if request.param == "dynamo":
        torch.onnx.export(channels_first(), (x,), str(path), dynamo=True, external_data=False)
    else:
        torch.onnx.export(channels_first(), (x,), str(path), dynamo=False, opset_version=17)
    return path


def test_the_file_has_no_value_in_the_norms_layout(exported: Path):
    model = onnx.load(str(exported))
    norm = [n for n in model.graph.node if n.op_type == "LayerNormalization"]
    assert len(norm) == 1 and norm[0].output[0] == model.graph.output[0].name     # the premise


def test_the_norm_is_compared_through_the_models_output(exported: Path):
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(exported), samples=2)).result
    assert r.verdict == "ok", r.drift_origin
    by = {L.module: L for L in r.layers}
    for m in ("block", "block.norm"):
        assert by[m].status == "ok" and by[m].onnx_values, (m, by[m].status, by[m].note)
    assert r.coverage.unmapped == 0


def test_a_weight_of_the_norm_is_named_there(exported: Path, tmp_path: Path):
    model = onnx.load(str(exported))
    norm = next(n for n in model.graph.node if n.op_type == "LayerNormalization")
    init = next(i for i in model.graph.initializer if i.name == norm.input[1])
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.05), init.name))
    planted = tmp_path / "planted.onnx"
    onnx.save(model, str(planted))
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(planted), samples=2)).result
    assert r.verdict == "drift" and r.drift_origin.module == "block.norm", r.drift_origin


def test_the_users_file_back_is_the_file(exported: Path):
    """The file written for the user (keep_float32.without_views) drops the view: the model output is its
    producer's again, and the graph computes what the file does."""
    import onnxruntime as ort

    from drifttui.core.onnx.edit.keep.float32 import without_views

    run = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(exported), samples=1))
    viewed = run.prepared.index.model
    assert any(n.output[0].endswith("::kept") for n in viewed.graph.node if n.output)     # the premise
    back = without_views(viewed)
    original = onnx.load(str(exported))
    assert sorted(n.op_type for n in back.graph.node) == sorted(n.op_type for n in original.graph.node)
    x = {original.graph.input[0].name: np.random.default_rng(0).standard_normal((2, 6, 16)).astype(np.float32)}
    want = ort.InferenceSession(original.SerializeToString()).run(None, x)
    got = ort.InferenceSession(back.SerializeToString()).run(None, x)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)




class Pooler(nn.Module):
    """Reads the first position itself, as SqueezeBERT's pooler: the model output's other reader is in a module."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = nn.Linear(16, 4)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(h[:, 0]))


class Encoder(nn.Module):
    """Permutes to (B, C, L) and back around its block, as SqueezeBERT's encoder: its output is the file's layout."""

    def __init__(self) -> None:
        super().__init__()
        self.block = Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x.permute(0, 2, 1)).permute(0, 2, 1)


class Pooled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()
        self.head = Pooler()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(x)
        return h, self.head(h)


def pooled() -> nn.Module:
    return off_identity(Pooled)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_through_ort_float16_the_container_keeps_its_value(exporter: str, tmp_path: Path):
    """ORT's float16 converter (keep_io_types) casts each model output back to float32 in a Cast it appends without
    a scope: the norm's value is no longer a model output but the Cast's input, and its way back went in the
    scope of its first reader, the pooler's, outside ``encoder``, which then had no value of its own: unmapped
    (SqueezeBERT's ``encoder``, u1 in its float16 copies).  A value a scope-less Cast hands to the model outputs is
    placed as a model output is: its way back in the scope of the callers of the outermost call that hands it on,
    the encoder's, whose output it is."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    raw, fp16 = tmp_path / "raw.onnx", tmp_path / "fp16.onnx"
    x = torch.randn(2, 6, 16)
    if exporter == "dynamo":
        torch.onnx.export(pooled(), (x,), str(raw), dynamo=True, external_data=False)
    else:
        torch.onnx.export(pooled(), (x,), str(raw), dynamo=False, opset_version=17)
    onnx.save(convert_float_to_float16(onnx.load(str(raw)), keep_io_types=True), str(fp16))
    model = onnx.load(str(fp16))
    cast = next(n for n in model.graph.node if n.output[0] == model.graph.output[0].name)
    assert cast.op_type == "Cast" and not cast.name.startswith("/") and not cast.metadata_props    # the premise
    spec = f"{__file__}:pooled"
    for path in (raw, fp16):
        r = run_once(Config(model=spec, inputs=INPUTS, onnx=str(path), samples=2)).result
        assert r.verdict == "ok", (path.name, r.drift_origin)
        by = {L.module: L for L in r.layers}
        for m in ("encoder", "encoder.block", "encoder.block.norm", "head"):
            assert by[m].status == "ok" and by[m].onnx_values, (path.name, m, by[m].status, by[m].note)
        assert r.coverage.unmapped == 0, path.name
