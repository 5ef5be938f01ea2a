"""A float16 file's attention mask is not an error of 3.40e+38.  torch writes an additive mask as float32's min
(``(1 - mask) * finfo(float32).min``, transformers' eager attention); ORT's float16 converter writes it as -65504,
float16's own extreme (a fully masked row through ``Where`` may hold -inf).  Both are minus infinity to the softmax
that reads them, and the model's outputs agree.  Before: the module that builds the mask (a BERT's root) read
"own err 3.40e+38" with status ok (its scale 3.4e38 let anything through).  Now two values saturated on the same
side, each at its own dtype's extreme, agree (core/base/metrics.py); an overflow stays an error
(tests/engine/test_metrics.py)."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from tests.deploy.precision_models import fp16_ort


class Attend(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.out = nn.Linear(16, 48), nn.Linear(16, 16)

    def forward(self, x, bias):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / 4.0 + bias
        return self.out(scores.softmax(-1) @ v)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.attend, self.head = nn.Linear(8, 16), Attend(), nn.Linear(16, 4)

    def forward(self, x, mask):
        bias = (1.0 - mask[:, None, :]) * torch.finfo(torch.float32).min     # the module's own value: the mask
        return self.head(self.attend(self.embed(x), bias))


def model() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()


def inputs():
    x = torch.randn(2, 6, 8)
    mask = torch.ones(2, 6)
    mask[0, 4:] = 0.0
    return (x, mask)


def _check(path):
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    return Pipeline().run(Config(model=f"{__file__}:model", inputs=f"{__file__}:inputs", onnx=str(path),
                                 samples=2)).result


@pytest.mark.parametrize("dynamo", [False, True])
def test_a_float16_file_s_mask_is_no_error(tmp_path, dynamo):
    raw = tmp_path / "raw.onnx"
    opset = {} if dynamo else {"opset_version": 17}
    torch.onnx.export(model(), inputs(), str(raw), dynamo=dynamo, input_names=["x", "mask"], **opset)
    result = _check(fp16_ort(raw, tmp_path / "fp16.onnx"))
    root = result.layers[0]
    assert root.local is not None, "the mask is the root's own value: it must be compared"
    own = root.local.max_abs.worst
    assert math.isfinite(own) and own < 0.05, own
    assert result.verdict != "drift" and root.status == "ok"


def bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=32, attn_implementation="eager")
    return BertModel(cfg).eval()


def bert_inputs():
    mask = torch.ones(1, 8, dtype=torch.int64)
    mask[:, 6:] = 0
    return {"input_ids": torch.randint(0, 128, (1, 8)), "attention_mask": mask}


@pytest.mark.deploy
@pytest.mark.transformers
def test_the_reviewer_s_bert_reads_honestly(tmp_path):
    """Session 36's new-user case: a TorchScript BertModel (eager attention, a padded input) through ORT's float16
    converter.  Its root read "own err 3.40e+38"; its float16 table showed negative shares with no word on them."""
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from tests.deploy.precision_models import export

    raw = export("bert", "bert_inputs", "torchscript", tmp_path / "export", spec_of=lambda f: f"{__file__}:{f}")
    half = fp16_ort(raw, tmp_path / "fp16.onnx")
    result = Pipeline().run(Config(model=f"{__file__}:bert", inputs=f"{__file__}:bert_inputs", onnx=str(half),
                                   samples=2)).result
    root = result.layers[0]
    assert root.local is not None and root.local.max_abs.worst < 0.05, root.local
    assert result.verdict != "drift"
    negative = [L.module for L in result.layers if L.budget is not None and (L.budget.share or 0) < 0]
    said = [n for n in result.notes if n.startswith("a negative share")]
    assert negative, "the case's premise: float32 in some layer makes the outputs' error larger"
    assert len(said) == 1 and "makes the outputs' error larger" in said[0], result.notes
