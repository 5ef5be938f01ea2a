"""Held-out batch N for issue 30 point 8 (session 33): a blind first-run measurement from the code users deploy, the
masking, position, loss, distance, cumulative and integer-conversion helpers inside real library model code
(transformers 5.23 as installed here, ultralytics, sentence-transformers), screened with torch 2.13 / ONNX Runtime
1.32, both exporters at their default opset, after grepping every earlier suite (forms*.py and their screened lists,
fx_forms, real, upstream, absorbed_*, benchmarks/causes_forms.py).  Written before the engine ran on any of them
(/tmp/heldN/judge.md of session 33): the first run's table is in test_forms40n.py.  Screening was time-boxed (33
minutes, eleven rounds).  **No form with a new mechanism still drifts**: every drift the screen found is a
mechanism an earlier suite holds, so none is kept as a drifting form; the batch is six clean controls of real
library helpers, each inside forms30's deep model (a 16-call stem, the helper as ``body``, a head: 20 module calls),
which a right engine must leave without a drift origin and without an error finding.

Screened and matching (within drifttui's tolerance, both exporters unless said), so not kept:
* real models (seeded small configs, padded batches): transformers ``WavLMModel`` (log relative-position buckets),
  ``Wav2Vec2Model`` with an ``attention_mask`` (feature lengths, pytorch/pytorch's and huggingface/transformers#16004
  / #34224's mask export), ``Wav2Vec2ConformerModel`` relative (TorchScript; dynamo fails) and rotary, ``SEWDModel``,
  ``MPNetModel`` (relative buckets), ``DebertaModel`` (c2p / p2c), ``FunnelBaseModel``, ``XLNetModel``
  (TorchScript; dynamo fails), ``LongformerModel`` (TorchScript at 0.84 of the tolerance; dynamo fails),
  ``BigBirdModel``, ``EsmModel`` (rotary), ``RobertaModel`` (cumsum position ids), ``DetrModel`` with a pixel mask,
  ``Speech2TextModel``'s encoder with a padded mask, ``DeformableDetrModel`` (dynamo: its pure-torch multi-scale
  deformable attention over ``grid_sample``; TorchScript's GridSample(20) ``mode="bilinear"`` is refused by ONNX
  Runtime), ``DacModel``, ``DPTForDepthEstimation``;
* helpers: ultralytics ``bbox_iou(CIoU=True)``, transformers ``generalized_box_iou`` (DETR's matcher cost),
  ``DetrSinePositionEmbedding`` in float32 and float16, wav2vec2's feature-vector mask from lengths of 0 up (a
  negative int64 floor division, index -1 wrapping), sentence-transformers' last-token pooling, transformers'
  ``TopPLogitsWarper`` over 4096 float32 logits (top-p 0.9 and 0.95), dynamic-NTK rotary ``inv_freq`` computed in the
  forward with positions up to 9000, a VITS ``generate_path`` (``ceil(exp(logw))``, ``cumsum``, sequence mask),
  ``torch.linalg.det`` of 3x3 and near-singular matrices, ``nn.EmbeddingBag`` mean / max / sum with empty bags,
  ``LocalResponseNorm``, ``AdaptiveLogSoftmaxWithLoss.log_prob``, ``index_fill`` / ``index_copy`` /
  ``masked_scatter``, ``tensordot``, ``addmm(beta=0)`` of a NaN input (TorchScript's ``Gemm``), ``celu`` / ``selu`` /
  ``glu`` / ``hardsigmoid``, ``logit`` without eps, ``nan_to_num`` of ``log``, ``clamp`` by tensors, ``frac`` /
  ``trunc`` / ``float_power`` / ``kron`` / ``rot90`` / ``bincount`` / ``polar`` (dynamo; TorchScript refuses them),
  ``torch.distributions`` ``Categorical`` / ``VonMises`` / ``Normal.cdf`` log-probabilities (TorchScript; dynamo fails
  to export); ``lgamma`` / ``digamma`` / ``polygamma`` / ``hypot`` / ``copysign`` / ``nextafter`` / ``frexp`` /
  ``erfinv`` (so StudentT / NegativeBinomial / Gamma / Beta NLLs) export with neither;
* measured on the side, no drift by drifttui's rule: torch 2.13's CPU ``sqrt`` is not correctly rounded (18.5% of
  float32 inputs in [1e-3, 20] one ulp off, perfect squares exact) where ONNX Runtime's is; ONNX Runtime's ``Tanh``
  / ``Log`` / ``Atan`` / ``Sin`` / ``Cos`` are up to 4 / 3 / 3 / 2 / 2 ulps from torch's; a pseudo-Huber loss
  ``sqrt(d^2 + c^2) - c`` cancels on these ulps, but under drifttui's absolute tolerance.
* drifting, but a mechanism the suites hold (not kept): ``cumsum`` of int32 past 2**31 (TorchScript; forms35),
  ``GPT2Model`` and ``LlamaModel`` with a left-padded batch (dynamo: SDPA's fully masked rows, forms38), ``softplus``
  with a threshold (TorchScript; forms20, real.py), ``baddbmm(beta=0)`` of an inf input (both: the term torch skips
  at a 0 coefficient), ``signbit`` of -0.0 (dynamo; absorbed_forms), ``special.erfcx`` (dynamo; held), an untrained
  ``RTDetrModel`` (both: its encoder scores all tie, so ``topk`` picks other queries: ties, real.py / upstream.py).

Clean controls kept (real helpers copied from their libraries, the source named on each; inputs drawn from the
features so the helper sees realistic, varied values):
* ``ciou_loss`` (loss / distance): ultralytics ``bbox_iou(box1, box2, xywh=True, CIoU=True)``
  (ultralytics/utils/metrics.py) of a predicted and a target box;
* ``giou_cost`` (distance): transformers ``generalized_box_iou`` / ``box_iou`` (transformers/loss/
  loss_for_object_detection.py) of sigmoid boxes against 8 targets, DETR's Hungarian matcher cost;
* ``sine_position`` (cumulative / arithmetic): transformers ``DetrSinePositionEmbedding`` with a pixel mask
  (``cumsum`` of the mask, normalised, ``temperature ** (2 * div(dim_t, 2, rounding_mode="floor") / d)``);
* ``feature_mask`` (integer conversion / masking): transformers ``Wav2Vec2PreTrainedModel.
  _get_feat_extract_output_lengths`` and ``_get_feature_vector_attention_mask`` (int64 floor division, an
  index_put, ``flip().cumsum().flip()``), a masked mean over the frames;
* ``feature_mask_empty``: the same with lengths from 0 (fully padded rows: negative quotients, index -1);
* ``last_token_pool`` (attention masking): sentence-transformers ``Pooling`` last-token mode
  (sentence_transformers/models/Pooling.py: an int32 mask, ``flip(1).max(1)``, ``where``, ``gather``).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep
from tests.causes.forms38 import _TEXT, VOCAB, _lib

WIDTH = 32


def bbox_ciou(box1: torch.Tensor, box2: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """ultralytics ``bbox_iou(box1, box2, xywh=True, CIoU=True)`` (ultralytics/utils/metrics.py), re-typed."""
    (x1, y1, w1, h1), (x2, y2, w2, h2) = box1.chunk(4, -1), box2.chunk(4, -1)
    w1_, h1_, w2_, h2_ = w1 / 2, h1 / 2, w2 / 2, h2 / 2
    b1_x1, b1_x2, b1_y1, b1_y2 = x1 - w1_, x1 + w1_, y1 - h1_, y1 + h1_
    b2_x1, b2_x2, b2_y1, b2_y2 = x2 - w2_, x2 + w2_, y2 - h2_, y2 + h2_
    inter = ((b1_x2.minimum(b2_x2) - b1_x1.maximum(b2_x1)).clamp(0)
             * (b1_y2.minimum(b2_y2) - b1_y1.maximum(b2_y1)).clamp(0))
    union = w1 * h1 + w2 * h2 - inter + eps
    iou = inter / union
    cw = b1_x2.maximum(b2_x2) - b1_x1.minimum(b2_x1)
    ch = b1_y2.maximum(b2_y2) - b1_y1.minimum(b2_y1)
    c2 = cw.pow(2) + ch.pow(2) + eps
    rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2).pow(2) + (b2_y1 + b2_y2 - b1_y1 - b1_y2).pow(2)) / 4
    v = (4 / math.pi**2) * ((w2 / h2).atan() - (w1 / h1).atan()).pow(2)
    alpha = v / (v - iou + (1 + eps))
    return iou - (rho2 / c2 + v * alpha)


def _box_area(b: torch.Tensor) -> torch.Tensor:
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])


def generalized_box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor) -> torch.Tensor:
    """transformers ``generalized_box_iou`` with its ``box_iou`` (transformers/loss/loss_for_object_detection.py;
    the corner-format checks, Python-side raises, left out)."""
    area1, area2 = _box_area(boxes1), _box_area(boxes2)
    right_bottom = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    left_top = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    inter_wh = (right_bottom - left_top).clamp(min=0)
    inter = inter_wh[:, :, 0] * inter_wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    iou = inter / union
    top_left = torch.min(boxes1[:, None, :2], boxes2[:, :2])
    bottom_right = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
    width_height = (bottom_right - top_left).clamp(min=0)
    area = width_height[:, :, 0] * width_height[:, :, 1]
    return iou - (area - union) / area


def center_to_corners(b: torch.Tensor) -> torch.Tensor:
    cx, cy, w, h = b.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], -1)


def conv_out_lengths(lengths: torch.Tensor, kernels: tuple, strides: tuple) -> torch.Tensor:
    """transformers ``Wav2Vec2PreTrainedModel._get_feat_extract_output_lengths`` (modeling_wav2vec2.py)."""
    for kernel_size, stride in zip(kernels, strides):
        lengths = torch.div(lengths - kernel_size, stride, rounding_mode="floor") + 1
    return lengths


class _Spread(nn.Module):
    """The deep stem gives six near-identical rows: each helper reads ``x + spread`` (a fixed offset per row, the
    batch is 6) so that its lengths, masks and boxes differ from row to row."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("spread", torch.linspace(-1.5, 1.5, 6)[:, None])


class CIoULoss(_Spread):
    """1 - CIoU of a predicted box (features 0..3) against a target box (features 4..7), added to the features."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = x + self.spread
        pred = torch.cat([v[:, :2], v[:, 2:4].abs() + 0.1], -1)
        target = torch.cat([v[:, 4:6] * 0.9, v[:, 6:8].abs() * 1.1 + 0.1], -1)
        return x + (1.0 - bbox_ciou(pred, target))


class GIoUCost(_Spread):
    """DETR's matcher cost ``-generalized_box_iou`` of sigmoid (cx, cy, w, h) boxes against 8 target boxes."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("targets", torch.rand(8, 4) * torch.tensor([1.0, 1.0, 0.5, 0.5])
                             + torch.tensor([0.0, 0.0, 0.05, 0.05]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pred = center_to_corners(torch.sigmoid(x[:, :4] + self.spread))
        cost = -generalized_box_iou(pred, center_to_corners(self.targets))
        return x + cost.repeat(1, 4)


class SinePosition(_Spread):
    """transformers ``DetrSinePositionEmbedding.build_sine_position_embedding`` (normalize=True, 16 features) of an
    8 x 16 pixel mask (the valid height and width of each row's image read from the features: bottom and right
    padding, as DETR's image processor pads), pooled and added."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = x + self.spread
        width = (v[:, 0] * 4 + 10).long().clamp(1, 16)
        height = (v[:, 1] * 2 + 5).long().clamp(1, 8)
        mask = ((torch.arange(8)[None, :, None] < height[:, None, None])
                & (torch.arange(16)[None, None, :] < width[:, None, None])).to(x.dtype)
        y_embed, x_embed = mask.cumsum(1), mask.cumsum(2)
        eps, scale = 1e-6, 2 * math.pi
        y_embed = y_embed / (y_embed[:, -1:, :] + eps) * scale
        x_embed = x_embed / (x_embed[:, :, -1:] + eps) * scale
        dim_t = torch.arange(16, dtype=torch.int64).to(x.dtype)
        dim_t = 10000 ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / 16)
        pos_x, pos_y = x_embed[:, :, :, None] / dim_t, y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return x + torch.cat((pos_y, pos_x), dim=3).mean((1, 2))


class FeatureMask(_Spread):
    """wav2vec2's feature-vector mask: per-row sample lengths of 800 from the features (about ``low`` - 270 ..
    ``low`` + 330; with ``low`` = 150 the first rows are fully padded or shorter than the receptive field: negative
    quotients, index -1), the frame lengths of a (10/5, 3/2, 3/2) conv stack, the frame mask by an index_put and a
    reversed cumsum, and a masked mean over projected frames."""

    KERNELS, STRIDES, SAMPLES = (10, 3, 3), (5, 2, 2), 800

    def __init__(self, low: float = 400.0, gain: float = 200.0) -> None:
        super().__init__()
        self.low, self.gain = low, gain
        n = self.SAMPLES
        for k, s in zip(self.KERNELS, self.STRIDES):
            n = (n - k) // s + 1
        self.frames = n
        self.frame_proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lengths = ((x[:, 0] + self.spread[:, 0]) * self.gain + self.low).long().clamp(0, self.SAMPLES)
        attention_mask = (torch.arange(self.SAMPLES)[None, :] < lengths[:, None]).long()
        frames_out = conv_out_lengths(attention_mask.cumsum(dim=-1)[:, -1], self.KERNELS, self.STRIDES).to(torch.long)
        fmask = torch.zeros((x.shape[0], self.frames), dtype=attention_mask.dtype)
        fmask[(torch.arange(x.shape[0]), frames_out - 1)] = 1
        fmask = fmask.flip([-1]).cumsum(-1).flip([-1]).bool()
        steps = torch.arange(self.frames, dtype=x.dtype)[None, :, None]
        frames = self.frame_proj(torch.sin(steps * 0.1 + x[:, None, :]))
        m = fmask[:, :, None].to(x.dtype)
        return x + (frames * m).sum(1) / m.sum(1).clamp(min=1)


class LastTokenPool(_Spread):
    """sentence-transformers ``Pooling`` last-token mode over 8 tokens of 4 features, an int32 mask of 0 .. 8 tokens
    read from the features (a row of none: the helper's ``where`` picks the last position)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.reshape(x.shape[0], 8, 4)
        n_tokens = ((x[:, 0] + self.spread[:, 0]) * 2.5 + 4.5).long().clamp(0, 8)
        attention_mask = (torch.arange(8)[None, :] < n_tokens[:, None]).to(torch.int32)
        seq_len = attention_mask.shape[1]
        values, indices = attention_mask.flip(1).max(1)
        indices = torch.where(values == 0, seq_len - 1, indices)
        gather_indices = (seq_len - indices - 1).unsqueeze(-1).repeat(1, tokens.shape[2]).unsqueeze(1)
        return x + torch.gather(tokens, 1, gather_indices).squeeze(1).repeat(1, 8)


def ciou_loss() -> nn.Module: return _deep(CIoULoss)                                              # noqa: E704
def giou_cost() -> nn.Module: return _deep(GIoUCost)                                              # noqa: E704
def sine_position() -> nn.Module: return _deep(SinePosition)                                      # noqa: E704
def feature_mask() -> nn.Module: return _deep(FeatureMask)                                        # noqa: E704
def feature_mask_empty() -> nn.Module: return _deep(lambda: FeatureMask(low=150.0))                 # noqa: E704
def last_token_pool() -> nn.Module: return _deep(LastTokenPool)                                   # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


# --- probed after the first run (not blind, not in its figures): forms38's left-padded library attention (a
# mechanism the suites hold) with the library's DEFAULT config, ``use_cache=True`` (forms38 sets it False): the
# attention is handed transformers' ``DynamicCache`` and ``update``s it, so the call recorded after the forward held
# its own keys and the next layer's, and the origin's re-export read twice the keys ("no patch among 1 tried").

def gpt2_cached_leftpad() -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    return _lib(GPT2Model, GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=32))


def left_padded() -> tuple[torch.Tensor, torch.Tensor]:
    """two prompts of 24 tokens, the second 7 tokens shorter, padded on the left."""
    mask = torch.ones(2, 24, dtype=torch.int64)
    mask[1, :7] = 0
    return torch.randint(3, VOCAB, (2, 24)), mask


def llama_cached_leftpad() -> nn.Module:
    from transformers import LlamaConfig, LlamaModel

    return _lib(LlamaModel, LlamaConfig(num_key_value_heads=2, max_position_embeddings=64, **_TEXT))
