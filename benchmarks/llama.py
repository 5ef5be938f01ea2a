"""LLaMA models for the big-model benchmark (benchmarks/bench_big.py), as MODEL specs
(``benchmarks/llama.py:llama_220m``): transformers' ``LlamaForCausalLM`` with seeded random
weights (no download), fp32, eval mode, no KV cache; input ``shape:int64:1x64`` (token ids)."""
from __future__ import annotations

import torch

SIZES = {
    # hidden, layers, intermediate, heads -> parameters
    "220m": (1024, 12, 2816, 16),       # 219.7 M, 0.88 GB of fp32 weights
    "1b": (2048, 18, 5632, 32),         # 1.06 B, 4.2 GB
}


def _llama(size: str) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden, layers, inter, heads = SIZES[size]
    cfg = LlamaConfig(vocab_size=32000, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=256,
                      use_cache=False, tie_word_embeddings=False)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).eval()


def llama_220m() -> torch.nn.Module:
    return _llama("220m")


def llama_1b() -> torch.nn.Module:
    return _llama("1b")


MODELS = {
    "llama220m": ("benchmarks/llama.py:llama_220m", "shape:int64:1x64"),
    "llama1b": ("benchmarks/llama.py:llama_1b", "shape:int64:1x64"),
}
