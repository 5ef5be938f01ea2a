"""Held-out batch 47A for issue 30 (session 47): a blind first-run measurement from a fresh angle, **document AI and
OCR models** (CRNN + CTC heads at inference, LayoutLM / LayoutLMv3 2-D box position embeddings with coordinate
scaling, truncation and clamping, TrOCR / Donut / VisionEncoderDecoder from transformers model classes with tiny
seeded configs, DB text-detection heads, EAST rotated boxes, table-structure heads), screened with torch 2.13 / ONNX
Runtime 1.32 (CPU), both exporters at their default opset, ORT at ``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on
(6, 32) rows (3 seeds), after grepping every earlier suite (no LayoutLM, TrOCR, Donut, DB binarisation, shoelace
polygon areas or table span heads in any of them).  Written before the engine diagnosed any of them
(/tmp/h47a/judge.md).  About 15 minutes, 32 models, some 120 exports (/tmp/h47a/s1.py, s2.py).

Screened, and what it showed:
* **the exporters compute what torch computes in float32** (0 to a few float32 ulps of the output's scale, both
  exporters, both ORT levels): DB binarisation ``sigmoid(k (P - T))`` at k = 50 and 200 and its explicit
  ``1 / (1 + exp(-k (P - T)))``, a DB map (conv-BN-ReLU, ``ConvTranspose2d`` x2), greedy CTC decoding (``log_softmax``,
  ``max``, collapse of repeats and blanks, a sequence confidence; also at temperature 30), tiny CRNNs (conv, height
  mean, bidirectional LSTM / GRU), LayoutLM box embeddings (``sigmoid * 1000``, ``.long()`` truncation or
  ``round``, ``clamp(0, 1000)``, min / max corner ordering, width / height lookups), pixel boxes normalised on a
  612 x 792 page, EAST RBOX decoding (rotation by ``cos`` / ``sin``, shoelace areas with ``roll``), rotated-box
  angle wrapping (``remainder``, ``atan2``, w / h swap by a ``floor`` parity), table row / column separators to span
  ids by ``cumsum`` and an outer-product cell map, span pooling by ``one_hot`` matmul; transformers
  ``LayoutLMModel``, ``LayoutLMv3Model`` (relative 1-D and 2-D position buckets), ``TrOCRForCausalLM``,
  ``DonutSwinModel`` and a ViT + TrOCR ``VisionEncoderDecoderModel`` (all seeded tiny configs).
* not kept: ``LiltModel`` / ``BrosModel`` (the screen's tiny configs did not run); a DB map under autocast exports
  with dynamo to a file ONNX Runtime refuses (a type error on the autocast ``ConvTranspose``); TorchScript's drifts as
  ``db_binarize``'s do.
* what drifts past drifttui's tolerance is ONNX Runtime's dropped float16 rounding (of the box head's Gemm output,
  read unrounded by the Sigmoid after it) where box coordinates ``sigmoid * 1000`` in float16 are truncated by
  ``.long()`` to embedding indices: a coordinate on the other integer is a different embedding row.  DB's
  ``k (P - T)`` at k = 50 and rotated-box corners under autocast drift too, but within the float16 budget.

Kept (each drifts with both exporters at both ORT levels; the origin is always ``body``):
* ``box_embed`` (deep): LayoutLM's 2-D position embedding, box coordinates from a float16 head scaled to 0..1000,
  truncated, clamped, looked up in x / y / h / w tables: 0.86 of the scale.
* ``layoutlmv3_boxes`` (deep): the same float16 box head feeding a tiny ``LayoutLMv3Model`` (its spatial embeddings
  and 2-D relative position buckets): 0.19 of the scale.
* ``layoutlm_boxes`` (deep): the same box head feeding a tiny ``LayoutLMModel`` (added after the first run showed
  ``db_binarize`` and ``rbox`` within drifttui's float16 budget): 4.2e-2.

Kept as drifts by the judge, but within drifttui's float16 budget (4 eps of float16, 3.9e-3 of the scale; the screen
measured max |d| / scale), so controls whose right answer is no error finding:
* ``db_binarize`` (deep): a DB head's probability and threshold maps in float16, ``sigmoid(50 (P - T))``: 1.5e-3.
* ``rbox`` (shallow): EAST RBOX corners decoded in float16 (edge distances ``sigmoid * 64``, an angle, rotation),
  the shoelace areas in float32: 6.1e-4.

Clean controls (the same code where nothing drifts): ``box_embed_f32``, ``layoutlmv3_f32``, ``layoutlm_f32``,
``db_binarize_f32``, ``rbox_f32`` (autocast disabled), and ``table_amp`` (table separators and cells under
autocast: 3.4e-5 of the scale, within drifttui's float16 budget; the right answer is no error finding).
"""
from __future__ import annotations

import math

import torch
import transformers
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


class DBBinarize(nn.Module):
    """DB text detection: probability and threshold maps ``sigmoid(linear)``, approximate binarisation
    ``sigmoid(k (P - T))``."""

    def __init__(self, amp: bool = True, k: float = 50.0) -> None:
        super().__init__()
        self.p, self.t, self.amp, self.k = nn.Linear(WIDTH, WIDTH), nn.Linear(WIDTH, WIDTH), amp, k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.amp):
            p, t = torch.sigmoid(self.p(x)), torch.sigmoid(self.t(x))
            b = torch.sigmoid(self.k * (p - t))
        return b.float()


def _ordered(b: torch.Tensor) -> torch.Tensor:
    """integer boxes with x0 <= x1, y0 <= y1."""
    return torch.stack([torch.min(b[..., 0], b[..., 2]), torch.min(b[..., 1], b[..., 3]),
                        torch.max(b[..., 0], b[..., 2]), torch.max(b[..., 1], b[..., 3])], -1)


class BoxEmbed(nn.Module):
    """LayoutLM's 2-D position embedding: 8 boxes ``sigmoid(linear) * 1000`` (under autocast when ``amp``),
    truncated to ints, clamped to 0..1000, x / y / h / w embedding lookups summed and averaged over the boxes."""

    def __init__(self, amp: bool = True) -> None:
        super().__init__()
        self.lin, self.amp = nn.Linear(WIDTH, WIDTH), amp
        self.xe, self.ye = nn.Embedding(1024, WIDTH), nn.Embedding(1024, WIDTH)
        self.he, self.we = nn.Embedding(1024, WIDTH), nn.Embedding(1024, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        with torch.autocast("cpu", dtype=HALF, enabled=self.amp):
            b = torch.sigmoid(self.lin(x)).view(n, 8, 4) * 1000.0
        x0, y0, x1, y1 = _ordered(b.long().clamp(0, 1000)).unbind(-1)
        e = (self.xe(x0) + self.ye(y0) + self.xe(x1) + self.ye(y1) + self.he((y1 - y0).clamp(0, 1023))
             + self.we((x1 - x0).clamp(0, 1023)))
        return e.mean(1)


class LayoutV3Boxes(nn.Module):
    """a tiny ``LayoutLMv3Model`` (text only, 1-D and 2-D relative position biases) over 8 tokens whose boxes come
    from a box head ``sigmoid(linear) * 1000`` (under autocast when ``amp``), truncated to ints."""

    def __init__(self, amp: bool = True) -> None:
        super().__init__()
        self.tok, self.box, self.amp = nn.Linear(4, 32), nn.Linear(WIDTH, 32), amp
        cfg = transformers.LayoutLMv3Config(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, vocab_size=64,
            max_position_embeddings=64, visual_embed=False, has_relative_attention_bias=True,
            has_spatial_attention_bias=True, rel_pos_bins=32, max_rel_pos=128, rel_2d_pos_bins=64,
            max_rel_2d_pos=256, coordinate_size=6, shape_size=4, input_size=32, patch_size=16)
        self.m = transformers.LayoutLMv3Model(cfg).eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        with torch.autocast("cpu", dtype=HALF, enabled=self.amp):
            b = torch.sigmoid(self.box(x)).view(n, 8, 4) * 1000
        ids = torch.arange(8).expand(n, 8) + 3
        out = self.m(input_ids=ids, bbox=_ordered(b.float().long())).last_hidden_state + self.tok(x.view(n, 8, 4))
        return out.mean(1)


class LayoutV1Boxes(nn.Module):
    """a tiny ``LayoutLMModel`` (LayoutLM v1: x / y / h / w position embeddings of the boxes) over 8 token embeddings
    whose boxes come from a box head ``sigmoid(linear) * 1000`` (under autocast when ``amp``), truncated to ints."""

    def __init__(self, amp: bool = True) -> None:
        super().__init__()
        self.tok, self.box, self.amp = nn.Linear(4, 32), nn.Linear(WIDTH, 32), amp
        cfg = transformers.LayoutLMConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                          intermediate_size=64, vocab_size=64, max_position_embeddings=64)
        self.m = transformers.LayoutLMModel(cfg).eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        with torch.autocast("cpu", dtype=HALF, enabled=self.amp):
            b = torch.sigmoid(self.box(x)).view(n, 8, 4) * 1000
        out = self.m(inputs_embeds=self.tok(x.view(n, 8, 4)), bbox=_ordered(b.float().long())).last_hidden_state
        return out.mean(1)


class RBox(nn.Module):
    """EAST RBOX decoding at 8 points of a text line: 4 edge distances ``sigmoid * 64`` and an angle in
    [-pi/4, pi/4), corners rotated about the point (under autocast when ``amp``), shoelace areas in float32."""

    def __init__(self, amp: bool = True) -> None:
        super().__init__()
        self.lin, self.amp = nn.Linear(WIDTH, 40), amp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        with torch.autocast("cpu", dtype=HALF, enabled=self.amp):
            g = self.lin(x).view(n, 8, 5)
            d = torch.sigmoid(g[..., :4]) * 64
            a = (torch.sigmoid(g[..., 4]) - 0.5) * math.pi / 2
            c, s = torch.cos(a)[..., None], torch.sin(a)[..., None]
            px = torch.linspace(0, 28, 8)[None, :, None]
            xs = torch.stack([-d[..., 3], d[..., 1], d[..., 1], -d[..., 3]], -1)
            ys = torch.stack([-d[..., 0], -d[..., 0], d[..., 2], d[..., 2]], -1)
            cx, cy = px + xs * c - ys * s, px + xs * s + ys * c
        cx, cy = cx.float(), cy.float()
        area = 0.5 * (cx * cy.roll(-1, -1) - cx.roll(-1, -1) * cy).sum(-1).abs()
        return torch.cat([area, cx.flatten(1)[:, :24]], 1)


class TableHead(nn.Module):
    """table structure: row / column separator probabilities (under autocast), ``cumsum`` of the thresholded
    separators to span ids, and an outer-product cell map."""

    def __init__(self) -> None:
        super().__init__()
        self.r, self.c = nn.Linear(WIDTH, 16), nn.Linear(WIDTH, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF):
            r, c = torch.sigmoid(self.r(x)), torch.sigmoid(self.c(x))
        r, c = r.float(), c.float()
        rid, cid = torch.cumsum((r > 0.5).float(), 1), torch.cumsum((c > 0.5).float(), 1)
        cells = (r[:, :, None] * c[:, None, :]).flatten(1)
        return torch.cat([rid, cid, cells[:, :WIDTH]], 1)


def box_embed() -> nn.Module: return _deep(BoxEmbed)                                                # noqa: E704
def box_embed_f32() -> nn.Module: return _deep(lambda: BoxEmbed(False))                              # noqa: E704
def layoutlmv3_boxes() -> nn.Module: return _deep(LayoutV3Boxes)                                    # noqa: E704
def layoutlmv3_f32() -> nn.Module: return _deep(lambda: LayoutV3Boxes(False))                        # noqa: E704
def layoutlm_boxes() -> nn.Module: return _deep(LayoutV1Boxes)                                     # noqa: E704
def layoutlm_f32() -> nn.Module: return _deep(lambda: LayoutV1Boxes(False))                         # noqa: E704
def db_binarize() -> nn.Module: return _deep(DBBinarize)                                            # noqa: E704
def db_binarize_f32() -> nn.Module: return _deep(lambda: DBBinarize(False))                          # noqa: E704
def rbox() -> nn.Module: return _shallow(RBox)                                                      # noqa: E704
def rbox_f32() -> nn.Module: return _shallow(lambda: RBox(False))                                   # noqa: E704
def table_amp() -> nn.Module: return _shallow(TableHead)                                            # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
