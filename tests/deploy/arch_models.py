"""Real architectures for the processed-file suite (test_processed_archs.py): transformers' BERT,
GPT-2 and LLaMA from small configs and timm's resnet18, seeded random weights, nothing downloaded.

Attention is the eager form where the library offers it: that is the pattern
onnxruntime.transformers' optimizer fuses into Attention (the sdpa form it leaves as MatMul/Softmax).
Each factory is a drifttui model spec target (``tests/deploy/arch_models.py:NAME``).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

ARCHS = Path(__file__).resolve().parent.parent / "archs"
if str(ARCHS) not in sys.path:
    sys.path.insert(0, str(ARCHS))
import zoo  # noqa: E402  (transformers first, then the torchvision shim timm needs)

HERE = Path(__file__).resolve()
HEADS, HIDDEN = 2, 32
_TEXT = dict(vocab_size=128, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS,
             intermediate_size=64, attn_implementation="eager")


def spec(fn: str) -> str:
    return f"{HERE}:{fn}"


def _hf(cls, cfg):
    """Seeded, with every 1-dim parameter (biases, norm scales) randomised too: a fresh model's zero
    biases and ones scales are dropped by the exporters and optimisers (GPT-2's Conv1D then exports
    a Gemm without C, which onnxruntime.transformers' gpt2 fusion cannot take), a trained one's are not."""
    torch.manual_seed(0)
    model = cls(cfg).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 1:
                p.add_(torch.randn(p.shape, generator=g) * 0.1)
    return model


def bert():
    from transformers import BertConfig, BertModel

    return _hf(BertModel, BertConfig(max_position_embeddings=32, **_TEXT))


def gpt2():
    from transformers import GPT2Config, GPT2Model

    return _hf(GPT2Model, GPT2Config(vocab_size=128, n_embd=HIDDEN, n_layer=2, n_head=HEADS, n_positions=32,
                                           use_cache=False, attn_implementation="eager"))


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    return _hf(LlamaForCausalLM, LlamaConfig(num_key_value_heads=HEADS, max_position_embeddings=32, use_cache=False,
                                             **_TEXT))


def resnet18():
    return zoo.resnet18()


def tokens():
    g = torch.Generator().manual_seed(0)
    return {"input_ids": torch.randint(0, 128, (1, 8), generator=g),
            "attention_mask": torch.ones(1, 8, dtype=torch.int64)}


def token_ids():
    g = torch.Generator().manual_seed(0)
    return {"input_ids": torch.randint(0, 128, (1, 8), generator=g)}


def img32():
    return torch.randn(1, 3, 32, 32)
