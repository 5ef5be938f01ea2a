"""Held-out batch 45R for issue 30 (session 45): a blind first-run measurement from a fresh angle, **embedding,
retrieval and metric-learning heads exported inside the model** (face recognition, re-identification, CLIP-style
towers, sentence embedders), screened with torch 2.13 / ONNX Runtime 1.32 (CPU), both exporters at their default
opset, ORT at ``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on forms30's (6, 32) rows, after grepping every earlier
suite (forms32/34/40f/40g/40i/40j/40l hold ``cdist``, ``cosine_similarity`` eps, float16 ``F.normalize`` and
``acos`` of a near-1 cosine; none holds a margin head, a squared-distance expansion written out, or a retrieval
``topk`` over a gallery).  Written before the engine diagnosed any of them (/tmp/h45R/judge.md).  About 10 minutes,
some 180 exports (/tmp/h45R/s1..s3.py).

Screened, and what it showed:
* **in float32 the exporters compute what torch computes** (0 or a few float32 ulps of the output's scale, both
  exporters, both ORT levels, deep and shallow): ArcFace (``cos(theta + m)`` by ``cos cos_m - sin sin_m`` with the
  ``where(cos > cos(pi - m))`` fallback and the easy margin; by ``acos`` of a clamped cosine and ``where(theta > pi -
  m)``), CosFace, SphereFace's ``cos(m theta)`` with ``(-1)^k - 2k``, labels from ``argmax`` / ``one_hot``; a CLIP head
  (``logit_scale.exp().clamp(max=100)``, ``x / x.norm(dim, keepdim=True)``, softmax); GeM pooling with a learned ``p``
  (``clamp(min=eps).pow(p)``, ``avg_pool2d``, ``pow(1 / p)``); attention pooling; PCA whitening with ``F.normalize``;
  product-quantisation codes (``argmin`` of the written-out squared distances to 4 x 16 codewords, ``gather`` of the
  codewords; at 0 and at a level of 20); binary hashing by ``sign`` with Hamming distances by a matmul and by ``(z -
  mean) > 0``; ``F.cosine_similarity`` broadcast against 32 prototypes; ``topk`` retrieval over a unique gallery;
  transformers ``CLIPModel`` (``logits_per_image``), ``BertModel`` and ``MPNetModel`` with masked mean pooling and
  ``F.normalize`` (seeded small configs).
* in float16 (a ``.half()`` head, ``torch.autocast``, a ``.half()`` transformers tower) most of it stays within
  drifttui's float16 budget (4e-4 - 4e-3 of the scale: ArcFace / CLIP / GeM / normalisation / cosine, transformers
  CLIP / BERT / MPNet); ``sign`` hashing of a float16 head flips no bit on these inputs.
* what drifts past the tolerance: **ONNX Runtime's dropped float16 rounding** (microsoft/onnxruntime#8787: its CPU
  runs the float16 chain through float32 Casts it inserts and drops the rounding between them; ORT's output is 4.6-18x
  nearer a float32 torch than the float16 torch) where an embedding head cancels: ArcFace's ``sqrt(1 - cos^2)`` of the
  near-1 cosine of a test-time-augmentation pair, and ``|a|^2 + |b|^2 - 2 a.b`` of un-centred embeddings; and **a
  tie order** (torch's CPU ``topk`` against ONNX ``TopK``'s lower index first) where a re-id gallery holds the same
  identity twice.  Also drifting in float32 but not kept: the same expansion in float32 at a level of 50 (3e-4,
  cancellation of both sides' float32 rounding: forms40f / 40l's ``cdist`` stories).

Kept (each drifts with both exporters at both ORT levels; the origin is always ``body``):
* ``margin_pair`` (deep): a float16 ArcFace margin on the cosine of two TTA embeddings; 1.4-2.1e-2 of the scale
  (the exporters also hold ``cos(0.5)`` as the float16 0.877441; torch multiplies by the Python scalar in float32).
  Near drifttui's worst-case float16 bound for ``body`` (1.7e-2): over it at seed 7 (the first run), within it at
  seed 0.
* ``amp_sqdist`` (deep): prototype distances under ``torch.autocast`` at a level of 4; 7e-3 of the scale.
* ``half_sqdist`` (shallow): the same expansion in a float16 head at a level of 8; 3.4-3.6e-2.
* ``gallery_topk`` (shallow): cosine retrieval ``topk`` 8 of a 32-item gallery whose second half repeats its first;
  0.5 of the scale (the indices).

Clean controls: ``margin_pair_f32`` (deep), ``amp_sqdist_f32`` (deep, autocast disabled), ``half_sqdist_centred``
(shallow, level 0: within the float16 budget, 4e-4), ``gallery_topk_unique`` (shallow), ``amp_clip`` (deep: a CLIP
head under autocast, 8e-4 - 1e-3 of the scale, within the float16 budget).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import rows_inputs, seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16

__all__ = ["rows_inputs"]


class MarginPair(nn.Module):
    """face verification with a test-time-augmentation pair: the embeddings of ``x`` and of a slightly shifted ``x``
    (``F.normalize`` of a ``dtype`` linear), their cosine, and ArcFace's additive angular margin
    ``cos(theta + m) = cos cos_m - sin sin_m`` with ``sin = sqrt((1 - cos^2).clamp(0, 1))``, scaled by ``s``."""

    def __init__(self, dtype: torch.dtype = HALF, m: float = 0.5, s: float = 64.0) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH).to(dtype)
        self.dtype, self.m, self.s = dtype, m, s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = F.normalize(self.lin(x.to(self.dtype)), dim=-1)
        e2 = F.normalize(self.lin((x + 0.05 * x.roll(1, -1)).to(self.dtype)), dim=-1)
        cos = (e1 * e2).sum(-1, keepdim=True)
        sin = torch.sqrt((1.0 - cos * cos).clamp(0, 1))
        phi = cos * math.cos(self.m) - sin * math.sin(self.m)
        return (phi * self.s).float().expand(-1, WIDTH)


class AmpSqDist(nn.Module):
    """prototype distances under ``torch.autocast``: un-centred embeddings (around ``level``) against 32 learned
    prototypes by the squared-distance expansion ``|a|^2 + |b|^2 - 2 a.b``, ``clamp_min(0).sqrt()`` in float32."""

    def __init__(self, enabled: bool = True, level: float = 4.0) -> None:
        super().__init__()
        self.lin, self.protos = nn.Linear(WIDTH, WIDTH), nn.Parameter(torch.randn(WIDTH, WIDTH))
        self.enabled, self.level = enabled, level

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            a, b = self.lin(x) + self.level, self.protos + self.level
            d = a.pow(2).sum(-1, keepdim=True) + b.pow(2).sum(-1) - 2 * a @ b.t()
        return d.float().clamp_min(0).sqrt()


class HalfSqDist(nn.Module):
    """the same expansion in a float16 head (``nn.Linear(...).half()``, prototypes cast to float16) at ``level``."""

    def __init__(self, level: float = 8.0) -> None:
        super().__init__()
        self.lin, self.protos = nn.Linear(WIDTH, WIDTH).to(HALF), nn.Parameter(torch.randn(WIDTH, WIDTH))
        self.level = level

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.lin(x.to(HALF)) + self.level, self.protos.to(HALF) + self.level
        d = (a * a).sum(-1, keepdim=True) + (b * b).sum(-1) - 2 * a @ b.t()
        return d.float().clamp_min(0).sqrt()


class GalleryTopk(nn.Module):
    """retrieval: cosine similarities of the normalised query against a normalised 32-item gallery, the top 8 scores
    and their gallery indices (``duplicates``: the gallery's second half repeats its first, as re-id galleries
    holding the same identity twice do)."""

    def __init__(self, duplicates: bool = True, k: int = 8) -> None:
        super().__init__()
        g = torch.randn(WIDTH, WIDTH)
        if duplicates:
            g[WIDTH // 2:] = g[:WIDTH // 2]
        self.register_buffer("gallery", F.normalize(g, dim=-1))
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sim = F.normalize(x, dim=-1) @ self.gallery.t()
        score, idx = sim.topk(self.k, -1)
        return torch.cat([score, idx.float(), score * 2.0, idx.float() + 1.0], 1)


class AmpClip(nn.Module):
    """a CLIP-style head under ``torch.autocast``: normalised image and text embeddings, ``logit_scale.exp()
    .clamp(max=100)`` times their similarity matrix, the logits in float32."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.img, self.txt = nn.Linear(WIDTH, WIDTH), nn.Parameter(torch.randn(WIDTH, WIDTH))
        self.logit_scale, self.enabled = nn.Parameter(torch.tensor(4.6052)), enabled

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.enabled):
            a, b = F.normalize(self.img(x), dim=-1), F.normalize(self.txt, dim=-1)
            logits = self.logit_scale.exp().clamp(max=100) * a @ b.t()
        return logits.float()


def margin_pair() -> nn.Module: return _deep(MarginPair)                                   # noqa: E704
def margin_pair_f32() -> nn.Module: return _deep(lambda: MarginPair(torch.float32))        # noqa: E704
def amp_sqdist() -> nn.Module: return _deep(AmpSqDist)                                     # noqa: E704
def amp_sqdist_f32() -> nn.Module: return _deep(lambda: AmpSqDist(enabled=False))          # noqa: E704
def half_sqdist() -> nn.Module: return _shallow(HalfSqDist)                                # noqa: E704
def half_sqdist_centred() -> nn.Module: return _shallow(lambda: HalfSqDist(0.0))           # noqa: E704
def gallery_topk() -> nn.Module: return _shallow(GalleryTopk)                              # noqa: E704
def gallery_topk_unique() -> nn.Module: return _shallow(lambda: GalleryTopk(False))        # noqa: E704
def amp_clip() -> nn.Module: return _deep(AmpClip)                                         # noqa: E704
