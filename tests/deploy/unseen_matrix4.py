"""A fourth held-out set (session 34's survey of files nobody here built): transformers SqueezeBERT (its layers run
as ``layer.forward``, channels-first with a permuting LayerNorm), Funnel (pooled queries), ConvBERT (span-based
dynamic convolution), MPNet (relative position bias), CvT (convolutional token embedding and projections); timm
RepVGG-A0 and MobileOne-S0 (training-time branches, not re-parameterised), ResMLP-12 (affine "norms"), CoaT-Lite
Tiny (convolutional relative position encoding), EfficientFormer-L1 (a 4-D and a 3-D stage, ``Flat``) and
TinyViT-5M.  Seeded random weights, nothing downloaded, small configs.  The machinery is unseen_matrix.py's
(registered here).

``python -m tests.deploy.unseen_matrix4 [ARCH ...] [TOOL ...] [dynamo|torchscript]`` prints the points.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from tests.deploy import drift_matrix as DM
from tests.deploy import unseen_matrix as U
from tests.deploy.unseen_matrix2 import _hf, _timm

HERE = Path(__file__).resolve()
tokens, img32, img64 = DM.tokens, DM.img32, DM.img64
_TEXT = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def spec(fn: str) -> str:
    return f"{HERE}:{fn}"


def img224():
    import torch

    return torch.randn(1, 3, 224, 224)


def squeezebert():
    from transformers import SqueezeBertConfig, SqueezeBertModel

    return _hf(SqueezeBertModel, SqueezeBertConfig(embedding_size=32, q_groups=2, k_groups=2, v_groups=2,
                                                   post_attention_groups=2, intermediate_groups=2, output_groups=2,
                                                   max_position_embeddings=32, **_TEXT))


def funnel():
    from transformers import FunnelBaseModel, FunnelConfig

    return _hf(FunnelBaseModel, FunnelConfig(vocab_size=128, block_sizes=[1, 1], d_model=32, n_head=2, d_head=16,
                                             d_inner=64, num_decoder_layers=1))


def convbert():
    from transformers import ConvBertConfig, ConvBertModel

    return _hf(ConvBertModel, ConvBertConfig(embedding_size=32, head_ratio=2, conv_kernel_size=3,
                                             max_position_embeddings=32, **_TEXT))


def mpnet():
    from transformers import MPNetConfig, MPNetModel

    return _hf(MPNetModel, MPNetConfig(max_position_embeddings=34, relative_attention_num_buckets=32, **_TEXT))


def cvt():
    from transformers import CvtConfig, CvtModel

    # depth[s] > s: transformers indexes a stage's drop-path rates by the stage
    return _hf(CvtModel, CvtConfig(embed_dim=[16, 32, 48], num_heads=[1, 2, 2], depth=[1, 2, 3]))


def repvgg():
    return _timm("repvgg_a0")


def mobileone():
    return _timm("mobileone_s0")


def resmlp():
    import zoo  # noqa: PLC0415  (the torchvision shim timm needs)
    from timm.models.mlp_mixer import Affine, MlpMixer, ResBlock

    import torch

    torch.manual_seed(0)
    return DM._randomised(zoo._seed_norms(MlpMixer(num_classes=10, img_size=64, patch_size=16, num_blocks=4,
                                                   embed_dim=64, mlp_ratio=4, block_layer=ResBlock,
                                                   norm_layer=Affine)))


def coat():
    return _timm("coat_lite_tiny", img_size=64)


def efficientformer():
    return _timm("efficientformer_l1")


def tinyvit():
    return _timm("tiny_vit_5m_224")


# arch -> (inputs, exporters, optimizer model_type, {kind: target}) as unseen_matrix.ARCHS
_W = dict(epsilon=None, pads=None, alpha=None)
ARCHS: dict[str, tuple[str, tuple[str, ...], str, dict[str, Any]]] = {
    "squeezebert": ("tokens", ("dynamo", "torchscript"), "bert",
                    {"weight": "encoder.layers.1.intermediate.conv1d", **_W}),
    "funnel": ("tokens", ("dynamo", "torchscript"), "bert", {"weight": "encoder.blocks.1.0.ffn.linear_1", **_W}),
    "convbert": ("tokens", ("dynamo", "torchscript"), "bert", {"weight": "encoder.layer.1.intermediate.dense", **_W}),
    "mpnet": ("tokens", ("dynamo", "torchscript"), "bert", {"weight": "encoder.layer.1.intermediate.dense", **_W}),
    "cvt": ("img64", ("dynamo", "torchscript"), "bert",
            {"weight": "encoder.stages.2.layers.0.intermediate.dense", **_W}),
    "repvgg": ("img32", ("dynamo", "torchscript"), "bert", {"weight": "stages.2.0.conv_kxk.conv", **_W}),
    "mobileone": ("img32", ("dynamo", "torchscript"), "bert", {"weight": "stages.2.1.conv_kxk.0.conv", **_W}),
    "resmlp": ("img64", ("dynamo", "torchscript"), "bert", {"weight": "blocks.2.mlp_channels.fc1", **_W}),
    "coat": ("img64", ("dynamo", "torchscript"), "bert", {"weight": "serial_blocks3.0.mlp.fc1", **_W}),
    "efficientformer": ("img224", ("dynamo", "torchscript"), "bert",
                        {"weight": "stages.3.blocks.4.mlp.fc1", **_W}),
    "tinyvit": ("img64", ("dynamo", "torchscript"), "bert", {"weight": "stages.2.blocks.0.mlp.fc1", **_W}),
}
TOOLS = ("onnxsim", "onnxslim", "ort-all", "fp16", "dynamic", "qdq")
U.register(sys.modules[__name__])


def _state(check: Callable[[], Any]) -> tuple[str, Any]:
    """A clean file's table cell: "ok" / "DRIFT at M" / the precision verdict / "exit 3", with calls mapped +
    fused and "uN" for N unmapped."""
    try:
        r = check()
    except Exception as exc:  # noqa: BLE001 - a crash is a survey point
        return f"exit 3 ({type(exc).__name__}: {str(exc)[:120]})", None
    c = r.coverage
    p = r.precision
    if r.verdict == "ok":
        state = "ok"
    elif p is not None and p.verdict == "over budget" and p.cause == "precision":
        state = "over (precision)"
    else:
        state = f"{r.verdict.upper()} at {r.drift_origin.module if r.drift_origin else None}"
    return f"{state} {c.mapped}+{c.fused}" + (f" u{c.unmapped}" if c.unmapped else ""), r


def survey(arch: str, exporter: str, tools: tuple[str, ...] = TOOLS, folder: Optional[Path] = None,
           say: Callable[[str], None] = print) -> None:
    """Each file's cell, clean and with the weight planted after the tool: survives a crash of the engine (exit 3)
    or of a tool, which U.measure does not."""
    folder = folder or Path(tempfile.mkdtemp(prefix=f"unseen4-{arch}-{exporter}-"))
    try:
        raw = U.export(arch, exporter, folder)
    except Exception as exc:  # noqa: BLE001
        say(f"raw	clean	export fails ({type(exc).__name__}: {str(exc)[:120]})")
        return
    say(f"raw	clean	{_state(lambda: U.check(arch, raw))[0]}")
    bad = U.plant(arch, "weight", raw, folder / "raw-weight.onnx", raw=True)
    truth = _state(lambda: U.check(arch, bad))[1] if bad is not None else None
    origin = truth.drift_origin.module if truth is not None and truth.drift_origin is not None else None
    say(f"raw	weight	{origin or 'not found in the raw export'}")
    for t in tools:
        try:
            dep = U.tool(t, arch, raw, folder / f"{t}.onnx")
        except Exception as exc:  # noqa: BLE001
            say(f"{t}	clean	the tool fails ({type(exc).__name__}: {str(exc)[:80]})")
            continue
        if not DM.loads(dep):
            say(f"{t}	clean	ONNX Runtime refuses the tool's file")
            continue
        say(f"{t}	clean	{_state(lambda: U.check(arch, dep))[0]}")
        planted = U.plant(arch, "weight", dep, folder / f"{t}-weight.onnx") if origin else None
        if planted is not None:
            cell, r = _state(lambda: U.check(arch, planted))
            say(f"{t}	weight	{DM.outcome(r, origin) if r is not None else cell}")


def main(argv: list[str]) -> None:
    DM.main(argv, ARCHS, TOOLS, lambda a, e, tools, say: survey(a, e, tools, say=say))


if __name__ == "__main__":
    main(sys.argv[1:])
