"""Real architectures from the libraries users deploy, built small, with seeded random weights.

timm ``create_model(..., pretrained=False)`` and transformers model classes from small configs:
nothing is downloaded.  BatchNorm statistics and affine parameters are randomised too (a fresh
BatchNorm is the identity, which would hide a value paired with the wrong side of a fold).
Each factory is a drifttui model spec target (``tests/archs/zoo.py:NAME``); ``NAME_in`` gives
its inputs.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:    # transformers decides once whether torchvision is there: before the shim, so it is not
    import transformers.utils.import_utils  # noqa: E402,F401
except ImportError:
    pass
import tvshim  # noqa: E402,F401  (timm imports torchvision; see tvshim.py)


def _seed_norms(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.2)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.8 + 0.6)
                if m.weight is not None:
                    m.weight.copy_(torch.rand(n, generator=g) * 0.8 + 0.6)
                    m.bias.copy_(torch.randn(n, generator=g) * 0.2)
    return model.eval()


def _timm(name: str, **kw):
    import timm

    torch.manual_seed(0)
    return _seed_norms(timm.create_model(name, pretrained=False, **kw))


def mobilenetv3():
    return _timm("mobilenetv3_small_050")


def efficientnet_b0():
    return _timm("efficientnet_b0")


def resnet18():
    return _timm("resnet18")


def convnext_atto():
    return _timm("convnext_atto")


def convnext_atto_ls():
    """ConvNeXt with a trained model's layer scales (timm initialises ``gamma`` to 1e-6, which makes
    every block's MLP all but invisible): seeded per channel, as training leaves them."""
    model = convnext_atto()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".gamma"):
                p.copy_(torch.rand(p.shape, generator=g) * 0.8 + 0.2)
    return model


def vit_timm():
    return _timm("vit_tiny_patch16_224", img_size=32, patch_size=8)


def mixer():
    return _timm("mixer_s32_224", img_size=64)


def img64():
    return torch.randn(1, 3, 64, 64)


def img32():
    return torch.randn(1, 3, 32, 32)


# --- transformers ----------------------------------------------------------------------

def _hf(model_cls, cfg):
    torch.manual_seed(0)
    return model_cls(cfg).eval()


_TEXT = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def bert():
    from transformers import BertConfig, BertModel

    return _hf(BertModel, BertConfig(max_position_embeddings=32, **_TEXT))


def gpt2():
    from transformers import GPT2Config, GPT2Model

    return _hf(GPT2Model, GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=2, n_positions=32,
                                     use_cache=False))


def llama():
    from transformers import LlamaConfig, LlamaModel

    return _hf(LlamaModel, LlamaConfig(num_key_value_heads=2, max_position_embeddings=32, use_cache=False, **_TEXT))


def t5():
    from transformers import T5Config, T5EncoderModel

    return _hf(T5EncoderModel, T5Config(vocab_size=128, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                                        use_cache=False))


def vit_hf():
    from transformers import ViTConfig, ViTModel

    return _hf(ViTModel, ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=64))


def clip_vision():
    from transformers import CLIPVisionConfig, CLIPVisionModel

    return _hf(CLIPVisionModel, CLIPVisionConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                                                 num_attention_heads=2, intermediate_size=64))


def whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    cfg = WhisperConfig(vocab_size=128, num_mel_bins=16, d_model=32, encoder_layers=2, encoder_attention_heads=2,
                        decoder_layers=1, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        max_source_positions=16)
    return _hf(WhisperEncoder, cfg)


def tokens(gen=None):
    g = torch.Generator().manual_seed(0)
    return {"input_ids": torch.randint(0, 128, (1, 8), generator=g),
            "attention_mask": torch.ones(1, 8, dtype=torch.int64)}


def token_ids():
    g = torch.Generator().manual_seed(0)
    return {"input_ids": torch.randint(0, 128, (1, 8), generator=g)}


def pixels():
    return {"pixel_values": torch.randn(1, 3, 32, 32)}


def mel():
    return {"input_features": torch.randn(1, 16, 32)}


def swin(**kw):
    """Two stages of shifted-window attention: a 16x16 then (after patch merging) 8x8 patch grid,
    window 4, so both stages shift (torch.roll, the attention mask); stage 2 has 2 heads."""
    from transformers import SwinConfig, SwinModel

    return _hf(SwinModel, SwinConfig(image_size=64, patch_size=4, num_channels=3, embed_dim=16, depths=[2, 2],
                                     num_heads=[1, 2], window_size=4, mlp_ratio=2.0, **kw))


def swin_eager():
    """``swin`` with eager attention: the dynamo exporter fails on the default (sdpa) one, a view of
    the 2-head attention output (``Cannot view a tensor with shape torch.Size([4, 16, 2, 16]) and
    strides (512, 16, 256, 1) as a tensor with shape (4, 16, 32)``, torch 2.13, transformers 5.23)."""
    return swin(attn_implementation="eager")


def wav2vec2():
    """Raw audio: a 2-layer conv feature extractor (GroupNorm on the first), the grouped, weight-normed
    positional conv, a 2-layer post-norm encoder."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), feat_extract_norm="group",
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, do_stable_layer_norm=False,
                         vocab_size=32)
    return _hf(Wav2Vec2Model, cfg)


def segformer():
    """Two encoder stages (spatial-reduction attention, Mix-FFN's depthwise conv) and the all-MLP decode
    head, which upsamples stage 2 to stage 1's resolution (bilinear interpolate: an ONNX Resize)."""
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    cfg = SegformerConfig(num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                          hidden_sizes=[16, 32], patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
                          mlp_ratios=[2, 2], decoder_hidden_size=32, num_labels=3)
    return _seed_norms(_hf(SegformerForSemanticSegmentation, cfg))


def pixels64():
    return {"pixel_values": torch.randn(1, 3, 64, 64)}


def audio():
    return {"input_values": torch.randn(1, 800)}


class _UNetSample(torch.nn.Module):
    """diffusers' UNet2DModel returning its sample tensor (its forward returns a dataclass)."""

    def __init__(self, unet: torch.nn.Module):
        super().__init__()
        self.unet = unet

    def forward(self, sample, timestep):
        return self.unet(sample, timestep).sample


def unet2d():
    """diffusers UNet2DModel, two resolutions with attention at the low one: every ResnetBlock2D calls
    its one shared SiLU twice (on the features and on the time embedding)."""
    from diffusers import UNet2DModel

    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(16, 32), norm_num_groups=8,
                       down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"))
    return _seed_norms(_UNetSample(unet)).eval()


def unet_inputs():
    return {"sample": torch.randn(1, 3, 16, 16), "timestep": torch.tensor([10], dtype=torch.int64)}
