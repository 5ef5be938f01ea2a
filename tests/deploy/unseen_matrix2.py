"""A second held-out set of files nobody here built (issue 33, "Judged by"): architectures no other suite
has through the deployment tools -- transformers DistilBERT, Qwen2 (grouped-query attention, biased
q/k/v), Swin (shifted windows); timm RegNetX, DenseNet (BatchNorm before its Conv: not folded) and
MobileViT (convolutions and transformer blocks, SiLU); diffusers' UNet2DModel.  Seeded random weights,
nothing downloaded, no torchvision, small configs (each file exports in seconds).

The machinery is unseen_matrix.py's (its tool(), plant(), check(), measure(), registered here through
``unseen_matrix.register``): every tool, clean and with one drift planted after the tool, each drift
judged where the same drift in the raw export is named.

``python -m tests.deploy.unseen_matrix2 [ARCH ...] [TOOL ...] [dynamo|torchscript]`` prints the points
(tab-separated); test_unseen_matrix2.py asserts them.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from tests.deploy import drift_matrix as DM
from tests.deploy import unseen_matrix as U

HERE = Path(__file__).resolve()
tokens, token_ids, img32, img64 = DM.tokens, DM.token_ids, DM.img32, DM.img64
_TEXT = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def spec(fn: str) -> str:
    return f"{HERE}:{fn}"


def _hf(cls: Any, cfg: Any) -> Any:
    import torch

    torch.manual_seed(0)
    return DM._randomised(cls(cfg))


def _timm(name: str, **kw: Any) -> Any:
    import zoo  # noqa: PLC0415  (transformers first, then the torchvision shim timm needs)

    return DM._randomised(zoo._timm(name, num_classes=10, **kw))


def distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    return _hf(DistilBertModel, DistilBertConfig(vocab_size=128, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                                 max_position_embeddings=32))


def qwen2():
    from transformers import Qwen2Config, Qwen2Model

    return _hf(Qwen2Model, Qwen2Config(num_key_value_heads=1, max_position_embeddings=32, use_cache=False,
                                       **_TEXT))


def swin():
    from transformers import SwinConfig, SwinModel

    return _hf(SwinModel, SwinConfig(image_size=32, patch_size=4, num_channels=3, embed_dim=16, depths=[2, 2],
                                     num_heads=[1, 2], window_size=4, mlp_ratio=2.0, attn_implementation="eager"))


def regnet():
    return _timm("regnetx_002")


def densenet():
    return _timm("densenet121", growth_rate=8, block_config=(2, 2, 2, 2))


def mobilevit():
    return _timm("mobilevit_xxs")


def unet():
    import zoo  # noqa: PLC0415

    return DM._randomised(zoo.unet2d())


def unet_in():
    import zoo  # noqa: PLC0415

    return zoo.unet_inputs()


# arch -> (inputs, exporters, optimizer model_type, {kind: target}) as unseen_matrix.ARCHS
ARCHS: dict[str, tuple[str, tuple[str, ...], str, dict[str, Any]]] = {
    "distilbert": ("tokens", ("dynamo", "torchscript"), "bert",
                   {"weight": "transformer.layer.1.ffn.lin1", "epsilon": "transformer.layer.1.output_layer_norm",
                    "pads": None, "alpha": -1}),
    "qwen2": ("token_ids", ("dynamo", "torchscript"), "gpt2",
              {"weight": "layers.1.mlp.up_proj", "epsilon": "layers.1.post_attention_layernorm", "pads": None,
               "alpha": None}),
    "swin": ("img32", ("dynamo", "torchscript"), "bert",
             {"weight": "encoder.layers.1.blocks.0.mlp.fc1",
              "epsilon": "encoder.layers.1.blocks.0.layernorm_after", "pads": None, "alpha": -1}),
    "regnet": ("img32", ("dynamo", "torchscript"), "bert",
               {"weight": "s3.b1.conv3.conv", "epsilon": None, "pads": "s2.b1.conv2.conv", "alpha": None}),
    "densenet": ("img32", ("dynamo", "torchscript"), "bert",
                 {"weight": "features.denseblock3.denselayer1.conv2",
                  "epsilon": "features.denseblock2.denselayer2.norm1",
                  "pads": "features.denseblock2.denselayer1.conv2", "alpha": None}),
    "mobilevit": ("img64", ("dynamo", "torchscript"), "bert",
                  {"weight": "stages.3.1.transformer.1.mlp.fc1", "epsilon": "stages.3.1.transformer.1.norm2",
                   "pads": "stages.2.0.conv2_kxk.conv", "alpha": None}),
    "unet": ("unet_in", ("dynamo", "torchscript"), "unet",
             {"weight": "unet.down_blocks.1.resnets.0.conv2", "epsilon": "unet.down_blocks.0.resnets.0.norm1",
              "pads": "unet.up_blocks.1.resnets.0.conv1", "alpha": None}),
}
TOOLS = U.TOOLS
U.register(sys.modules[__name__])


def redo(tool: str, arch: str, raw: Path, dst: Path, names: list[str]) -> Path:
    """The user's own converter call again, told to keep ``names`` (the keep-list's nodes)."""
    import onnx

    from tests.deploy import precision_models as PM

    if tool == "dynamic":
        return PM.int8_dynamic(raw, dst, nodes_to_exclude=names)
    if tool in ("qdq", "qoperator"):
        q = PM.int8_qdq if tool == "qdq" else PM.int8_qoperator
        return q(raw, dst, U._feeds(raw, arch), n=4, nodes_to_exclude=names)
    if tool == "int4":
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        q = MatMulNBitsQuantizer(onnx.load(str(raw)), block_size=32, is_symmetric=True, nodes_to_exclude=names)
        q.process()
        q.model.save_model_to_file(str(dst), False)
        return dst
    if tool == "amp":
        raise ValueError("auto_mixed_precision takes no keep-list")
    if tool in ("fp16", "fp16-io"):
        from onnxruntime.transformers import float16 as conv
    else:
        from onnxconverter_common import float16 as conv
    keep_io = tool in ("fp16", "fp16-occ")
    onnx.save(conv.convert_float_to_float16(onnx.load(str(raw)), keep_io_types=keep_io, node_block_list=names),
              str(dst))
    return dst


def keep_outcome(arch: str, tool: str, raw: Path, dep: Path, folder: Path) -> str:
    """An over-budget clean file's keep-list, fed back to the user's converter: "keep-list accepted (N nodes)",
    or what failed (the judge's rule: over budget only with a keep-list the user's converter accepts)."""
    from drifttui.core.pipeline import Pipeline

    p = Pipeline()
    h = U.home(arch)
    from drifttui.core.result import Config

    r = p.run(Config(model=h.spec(arch), inputs=h.spec(h.ARCHS[arch][0]), onnx=str(dep), samples=2)).result
    done = p.repair(r)
    keep = done.keep
    if done.kind != "keep_list" or keep is None or not keep.verified or not keep.nodes:
        return f"NO keep-list ({done.kind}: {getattr(done, 'reason', '')})"[:160]
    try:
        again = U.check(arch, redo(tool, arch, raw, folder / f"{tool}-redone.onnx", keep.nodes))
    except Exception as exc:  # noqa: BLE001
        return f"keep-list of {len(keep.nodes)} nodes REFUSED by the converter ({type(exc).__name__}: {str(exc)[:60]})"
    if again.verdict != "ok":
        return f"keep-list of {len(keep.nodes)} nodes: the redone file is still {again.verdict}"
    return f"keep-list accepted ({len(keep.nodes)} nodes)"


def measure(arch: str, exporter: str, tools: tuple[str, ...] = TOOLS, kinds: tuple[str, ...] = U.KINDS,
            folder: Optional[Path] = None, say: Callable[[str], None] = print) -> dict:
    """unseen_matrix.measure, then each clean file over budget through its precision: its keep-list fed back
    to the converter (point ``(tool, "keep")``)."""
    folder = folder or Path(tempfile.mkdtemp(prefix=f"unseen2-{arch}-{exporter}-"))
    out = U.measure(arch, exporter, tools, kinds, folder, say)
    for t in tools:
        if str(out.get((t, "clean"), "")).startswith("over budget"):
            try:
                out[(t, "keep")] = keep_outcome(arch, t, folder / f"{arch}-raw.onnx", folder / f"{t}.onnx", folder)
            except Exception as exc:  # noqa: BLE001
                out[(t, "keep")] = f"error ({type(exc).__name__}: {str(exc)[:100]})"
            say(f"{t}\tkeep\t{out[(t, 'keep')]}")
    return out


def main(argv: list[str]) -> None:
    DM.main(argv, ARCHS, TOOLS, measure)


if __name__ == "__main__":
    main(sys.argv[1:])
