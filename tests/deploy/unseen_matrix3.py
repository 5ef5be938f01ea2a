"""A third held-out set (session 32's survey of files nobody here built): transformers ALBERT (one layer object
called for every layer), DeBERTa-v2 (relative attention, an int64 mask its layers turn into a bool one) and
timm LeViT-128S (``LinearNorm``: Linear, BatchNorm1d on the flattened tokens, reshaped back) and PoolFormer-S12
at 32x32 (its last stage's token mixers ``pool(x) - x`` all 0).  Seeded random
weights, nothing downloaded, small configs.  The machinery is unseen_matrix.py's (registered here).

``python -m tests.deploy.unseen_matrix3 [ARCH ...] [TOOL ...] [dynamo|torchscript]`` prints the points.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.deploy import drift_matrix as DM
from tests.deploy import unseen_matrix as U
from tests.deploy.unseen_matrix2 import _hf, _timm

HERE = Path(__file__).resolve()
tokens, img32, img64 = DM.tokens, DM.img32, DM.img64
_TEXT = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def spec(fn: str) -> str:
    return f"{HERE}:{fn}"


def albert():
    from transformers import AlbertConfig, AlbertModel

    return _hf(AlbertModel, AlbertConfig(embedding_size=16, attn_implementation="eager", **_TEXT))


def deberta():
    from transformers import DebertaV2Config, DebertaV2Model

    return _hf(DebertaV2Model, DebertaV2Config(max_position_embeddings=32, relative_attention=True, position_buckets=8,
                                               pos_att_type=["p2c", "c2p"], **_TEXT))


def levit():
    return _timm("levit_128s", img_size=64)


def poolformer():
    return _timm("poolformer_s12")       # at 32x32 stage 3's maps are 1x1: its token mixers are all 0


# arch -> (inputs, exporters, optimizer model_type, {kind: target}) as unseen_matrix.ARCHS
ARCHS: dict[str, tuple[str, tuple[str, ...], str, dict[str, Any]]] = {
    "albert": ("tokens", ("dynamo", "torchscript"), "bert",
               {"weight": "encoder.albert_layer_groups.0.albert_layers.0.ffn", "epsilon": None, "pads": None,
                "alpha": None}),
    "deberta": ("tokens", ("dynamo", "torchscript"), "bert",
                {"weight": "encoder.layer.1.intermediate.dense", "epsilon": None, "pads": None, "alpha": None}),
    "levit": ("img64", ("dynamo", "torchscript"), "bert",
              {"weight": "stages.1.blocks.0.mlp.ln1.linear", "epsilon": None, "pads": None, "alpha": None}),
    "poolformer": ("img32", ("dynamo", "torchscript"), "bert",
                   {"weight": "stages.2.blocks.0.mlp.fc1", "epsilon": None, "pads": None, "alpha": None}),
}
U.register(sys.modules[__name__])


def main(argv: list[str]) -> None:
    DM.main(argv, ARCHS, U.TOOLS + ("onnxoptimizer",), lambda a, e, tools, say: U.measure(a, e, tools, ("weight",),
                                                                                        say=say))


if __name__ == "__main__":
    main(sys.argv[1:])
