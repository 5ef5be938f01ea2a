"""Upstream drift forms that live inside real architectures' OWN code (issue 30 point 8, session 27): the
library class is built from a small seeded config (nothing downloaded), the user does nothing unusual, and
the drifting call is the library's.  None of them is in forms20/30/32-36, forms_special/nan/dof, upstream.py,
real.py or the catalogue as an architecture form (forms30's ``sdpa_masked`` is the op-level sibling: a
hand-built float mask whose masked row gives NaN in the lowering; here the library builds a boolean mask and
the dynamo lowering gives a finite, wrong average).  Each still reproduces with torch 2.13 / ONNX Runtime 1.32
/ transformers 5.23 (``test_forms38.py`` says with which exporter).

* ``llama_leftpad`` / ``qwen2_leftpad`` / ``mistral_leftpad`` / ``gpt2_leftpad`` / ``clip_leftpad``: a batch
  of two prompts, the second left-padded (batched generation's padding side), through the model's default
  ``sdpa`` attention.  transformers' ``sdpa_mask`` gives a boolean causal-and-padding mask in which the padded
  positions' query rows attend to nothing; torch's ``scaled_dot_product_attention`` returns 0 for a fully
  masked row (``_safe_softmax``, pytorch/pytorch#103749, #159973; transformers relies on it for torch >= 2.5,
  ``allow_torch_fix``), the dynamo exporter's lowering (torchlib's ``aten_scaled_dot_product_attention_bool_mask``,
  microsoft/onnxscript#2479) turns the mask into a large negative bias and averages every value there.
  The TorchScript file is right.
* ``bert_empty_row``: a BERT batch padded to a fixed batch size with an all-padding row (serving pads the
  batch): every query of that row attends to nothing, the same lowering.
* clean controls: ``llama_rightpad`` (right padding: no fully masked row), ``gemma2_leftpad`` (eager
  attention: transformers adds a finite min-float bias, no boolean mask reaches SDPA), ``bert_padded``
  (padding inside a row: no fully masked row).
"""
from __future__ import annotations

import torch
from torch import nn

VOCAB, SEQ = 128, 8
_TEXT = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


class Lib(nn.Module):
    """A transformers model returning its last hidden state (its forward returns a dataclass)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _lib(cls: type, cfg: object) -> nn.Module:
    torch.manual_seed(0)
    return Lib(cls(cfg)).eval()


def llama(**kw: object) -> nn.Module:
    from transformers import LlamaConfig, LlamaModel

    return _lib(LlamaModel, LlamaConfig(num_key_value_heads=2, max_position_embeddings=64, use_cache=False, **_TEXT, **kw))


def qwen2() -> nn.Module:
    from transformers import Qwen2Config, Qwen2Model

    return _lib(Qwen2Model, Qwen2Config(num_key_value_heads=1, max_position_embeddings=64, use_cache=False, **_TEXT))


def mistral() -> nn.Module:
    from transformers import MistralConfig, MistralModel

    return _lib(MistralModel, MistralConfig(num_key_value_heads=2, max_position_embeddings=64, sliding_window=4,
                                            use_cache=False, **_TEXT))


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    return _lib(GPT2Model, GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=32,
                                      use_cache=False))


def clip_text() -> nn.Module:
    from transformers import CLIPTextConfig, CLIPTextModel

    return _lib(CLIPTextModel, CLIPTextConfig(max_position_embeddings=16, **_TEXT))


def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    return _lib(BertModel, BertConfig(max_position_embeddings=32, **_TEXT))


def gemma2() -> nn.Module:
    from transformers import Gemma2Config, Gemma2Model

    return _lib(Gemma2Model, Gemma2Config(num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                                          sliding_window=4, use_cache=False, **_TEXT))


def opt() -> nn.Module:
    from transformers import OPTConfig, OPTModel

    return _lib(OPTModel, OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                    ffn_dim=64, max_position_embeddings=32, word_embed_proj_dim=32, use_cache=False))


def phi() -> nn.Module:
    from transformers import PhiConfig, PhiModel

    return _lib(PhiModel, PhiConfig(num_key_value_heads=2, max_position_embeddings=64, partial_rotary_factor=0.5,
                                    use_cache=False, **_TEXT))


# held out: written after call_structure.py, not in the first-run figures
def opt_leftpad() -> nn.Module: return opt()                                       # noqa: E704
def phi_leftpad() -> nn.Module: return phi()                                       # noqa: E704


def llama_leftpad() -> nn.Module: return llama()                                   # noqa: E704
def llama_rightpad() -> nn.Module: return llama()                                  # noqa: E704
def qwen2_leftpad() -> nn.Module: return qwen2()                                   # noqa: E704
def mistral_leftpad() -> nn.Module: return mistral()                               # noqa: E704
def gpt2_leftpad() -> nn.Module: return gpt2()                                     # noqa: E704
def clip_leftpad() -> nn.Module: return clip_text()                                # noqa: E704
def bert_empty_row() -> nn.Module: return bert()                                   # noqa: E704
def bert_padded() -> nn.Module: return bert()                                      # noqa: E704
def gemma2_leftpad() -> nn.Module: return gemma2()                                 # noqa: E704


def _ids(n: int = SEQ) -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, n))


def left_padded() -> tuple[torch.Tensor, torch.Tensor]:
    """two prompts, the second one 3 tokens shorter, padded on the left."""
    mask = torch.ones(2, SEQ, dtype=torch.int64)
    mask[1, :3] = 0
    return _ids(), mask


def right_padded() -> tuple[torch.Tensor, torch.Tensor]:
    mask = torch.ones(2, SEQ, dtype=torch.int64)
    mask[1, -3:] = 0
    return _ids(), mask


def empty_row() -> tuple[torch.Tensor, torch.Tensor]:
    """a batch padded to its fixed size: the second row is all padding."""
    mask = torch.ones(2, SEQ, dtype=torch.int64)
    mask[1] = 0
    return _ids(), mask


# --- the mechanism's own check (tests/causes/test_call_structure.py): a child module called the way libraries
# call theirs, keyword arguments and a tuple, whose TorchScript lowering is wrong (forms36's circular pad with
# a cropping side); the dynamo export of the child alone is right, but only when it is called as it was.

class CroppedPad(nn.Module):
    def forward(self, hidden: torch.Tensor, pads: tuple, scale: float = 1.0) -> torch.Tensor:
        y = torch.nn.functional.pad(hidden.view(hidden.shape[0], 2, 16), pads, mode="circular")
        return y.reshape(hidden.shape[0], -1)[:, :32] * scale


class KwargsCaller(nn.Module):
    """two blocks of the same class (a library's layers): the file is right only when both are repaired."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(32, 32)
        self.body = CroppedPad()
        self.mid = nn.Linear(32, 32)
        self.body2 = CroppedPad()
        self.head = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(hidden=self.proj(x), pads=(3, -1), scale=0.5)
        return self.head(self.body2(hidden=self.mid(h), pads=(3, -1), scale=0.5))


def kwargs_caller() -> nn.Module:
    torch.manual_seed(0)
    return KwargsCaller().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)
