"""Held-out batch 47C for issue 30 (session 47): a blind first-run measurement from a fresh angle, **vision-transformer
plumbing** (position-embedding interpolation to another grid, Swin windows, relative / continuous position bias,
ConvNeXt LayerNorm2d and layer scale, 2-D sin-cos embeddings built in forward, ToMe token merging, float16 and
autocast), screened with torch 2.13 / ONNX Runtime 1.32 (CPU), both exporters at their default opset, ORT at
``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on (6, 32) rows inside ``seeded_deep`` / ``seeded_shallow``, after grepping
every earlier suite.  Written before the engine diagnosed any of them (/tmp/h47c/judge.md).  About 20 minutes,
some 90 exports (/tmp/h47c/s1.py .. s3.py; timm 1.x does not import here without torchvision, so timm's code is
written out in plain torch).

Screened, and what it showed:
* **the exporters compute what torch computes** (float32 ulps, both exporters, both ORT levels): a 3x3 position
  embedding to 4x4 by ``size`` bicubic / bicubic ``align_corners`` / bilinear, by a non-integer ``scale_factor``
  without antialias (transformers' Dinov2), timm's ``resample_abs_pos_embed`` (``size``, ``antialias=True``, up and
  down; dynamo), a float16 position embedding interpolated in float16 (ORT's float16 Resize is bitwise torch's);
  Swin window partition / reverse with ``torch.roll`` shifted windows, the ``img_mask`` slices and the ``-100``
  ``masked_fill`` built in forward, the relative position bias gathered by an index buffer, Swin v2's cosine attention
  (``F.normalize``, ``clamp(logit_scale, max=log 100).exp()``), in float32, float16 and under autocast (3e-4 of the
  scale: float16 within drifttui's budget); ConvNeXt's LayerNorm2d (manual mean / var over channels, and
  ``F.layer_norm`` on the permuted map) at an offset of 300, layer scale 1e-6, float16; 2-D sin-cos embeddings built
  in forward from ``meshgrid`` (constant-folded by both exporters); ToMe merging with ``reduce="sum"`` and the
  proportional-attention sizes (dynamo).
* exporting with neither or not running (not kept): TorchScript refuses ``_upsample_bicubic2d_aa`` /
  ``_upsample_bilinear2d_aa`` and ``scatter_reduce(..., "mean")``; its ``scatter_reduce(..., "sum")`` file is refused
  by ONNX Runtime (a Concat of wrong ranks).  A float16 ViT embedding (float16 Resize + a LayerNorm over 2 channels)
  drifted 1e-2 with both exporters, but from the LayerNorm of two nearly equal values, not from the plumbing (the
  Resize alone is bitwise torch's): not kept.
* what drifts past drifttui's tolerance does so by mechanisms the catalogue holds, in forms no suite has:
  **DINOv2's interpolate_pos_encoding** (``scale_factor=(w0 + 0.1) / M``, ``antialias=True``): the dynamo lowering of
  the antialiased upsample gives ``Resize`` the output sizes, so ONNX Runtime maps coordinates by 4/3 where torch maps
  them by the 4.1/3 it was given (5e-2 of the scale); **ToMe's bipartite soft matching** merging with
  ``scatter_reduce(..., reduce="mean")``: the dynamo exporter lowers it as ``ScatterElements(reduction="none")``
  (0.23 off).

Kept (each drifts at both ORT levels; the origin is always ``body``; the TorchScript exporter refuses all four):
* ``dino_aa`` (deep): a 3x3 position embedding (and a class token) to the 4x4 grid by ``scale_factor`` 4.1/3,
  bicubic, antialias.
* ``dino_aa_down`` (shallow): the same from 5x5 by 4.1/5 (a down-sample: the antialias filter widens).
* ``dino_aa_bilinear`` (deep): bilinear, antialias, 4.1/3.
* ``tome`` (deep): ToMe on 8 tokens of 4: cosine scores of a key projection between alternate tokens, ``max``,
  ``argsort`` descending, the 3 best sources ``gather``ed and merged into their destinations by ``scatter_reduce``
  mean.

Clean controls (the same code where nothing drifts): ``dino_noaa`` (deep, no antialias: the lowering passes the
scales; both exporters), ``dino_aa_int`` (deep, antialias by an exact 4/2: sizes and scales agree; dynamo),
``tome_sum`` (deep, ``reduce="sum"``: ScatterElements add; dynamo), ``swin`` (deep: shifted-window attention with the
relative position bias and the -100 mask; both exporters) and ``swin_v2`` (deep: cosine attention with a clamped
logit scale; dynamo).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow


class DinoPosEmbed(nn.Module):
    """DINOv2's ``interpolate_pos_encoding``: the class token's embedding kept, the MxM patch grid interpolated by
    ``scale_factor=(w0 + 0.1) / M`` to the 4x4 grid of 16 tokens of width 2, added to the tokens."""

    def __init__(self, grid: int = 3, w0: int = 4, antialias: bool = True, offset: float = 0.1,
                 mode: str = "bicubic") -> None:
        super().__init__()
        self.pos_embed = nn.Parameter(torch.randn(1, 1 + grid * grid, 2))
        self.grid, self.w0, self.antialias, self.offset, self.mode = grid, w0, antialias, offset, mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, m = x.shape[0], self.grid
        patch = self.pos_embed[:, 1:].reshape(1, m, m, 2).permute(0, 3, 1, 2)
        sf = (self.w0 + self.offset) / m
        patch = F.interpolate(patch, scale_factor=(sf, sf), mode=self.mode, antialias=self.antialias)
        patch = patch.permute(0, 2, 3, 1).reshape(1, -1, 2)
        pos = torch.cat([self.pos_embed[:, :1], patch], 1)[:, :16]
        return (x.view(n, 16, 2) + pos).reshape(n, 32)


class ToMeMerge(nn.Module):
    """ToMe's bipartite soft matching on 8 tokens of width 4: cosine scores of a key projection between the even
    (sources) and odd (destinations) tokens, each source's best match, the ``r`` best sources merged into their
    destinations by ``scatter_reduce(reduce=mode)``; the 5 tokens left flattened (and their first 12 repeated)."""

    def __init__(self, r: int = 3, mode: str = "mean") -> None:
        super().__init__()
        self.r, self.mode = r, mode
        self.key = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, r = x.shape[0], self.r
        t = x.view(n, 8, 4)
        k = self.key(t)
        k = k / k.norm(dim=-1, keepdim=True)
        scores = k[:, ::2] @ k[:, 1::2].transpose(-1, -2)
        node_max, node_idx = scores.max(-1)
        edge_idx = node_max.argsort(-1, descending=True)[..., None]
        unm_idx, src_idx = edge_idx[:, r:], edge_idx[:, :r]
        dst_idx = node_idx[..., None].gather(1, src_idx)
        src, dst = t[:, ::2], t[:, 1::2]
        unm = src.gather(1, unm_idx.expand(n, 4 - r, 4))
        merged = dst.scatter_reduce(1, dst_idx.expand(n, r, 4), src.gather(1, src_idx.expand(n, r, 4)),
                                    reduce=self.mode)
        out = torch.cat([unm, merged], 1).flatten(1)
        return torch.cat([out, out[:, :12]], 1)


def _window_mask(size: int, ws: int, shift: int) -> torch.Tensor:
    """Swin's attention mask of the shifted windows: region labels by slices, -100 between regions."""
    img = torch.zeros(1, size, size, 1)
    cnt = 0
    for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
        for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
            img[:, hs, wsl, :] = cnt
            cnt += 1
    mw = img.view(1, size // ws, ws, size // ws, ws, 1).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws)
    m = mw.unsqueeze(1) - mw.unsqueeze(2)
    return m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)


class SwinWindow(nn.Module):
    """a Swin block's attention on a 4x4 map of width 2: ``torch.roll`` shifted 2x2 windows, the relative position
    bias gathered from its table by an index buffer, the -100 mask built in forward; ``v2``: cosine attention scaled
    by ``clamp(logit_scale, max=log 100).exp()``."""

    def __init__(self, shift: int = 1, ws: int = 2, v2: bool = False) -> None:
        super().__init__()
        self.shift, self.ws, self.v2 = shift, ws, v2
        self.qkv = nn.Linear(2, 6)
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, 1) * 2)
        c = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + ws - 1
        self.register_buffer("index", rel[..., 0] * (2 * ws - 1) + rel[..., 1], persistent=False)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(1, 1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, ws, s = x.shape[0], self.ws, self.shift
        t = torch.roll(x.view(n, 2, 4, 4).permute(0, 2, 3, 1), (-s, -s), (1, 2))
        w = t.view(n, 4 // ws, ws, 4 // ws, ws, 2).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, 2)
        q, k, v = self.qkv(w).chunk(3, -1)
        if self.v2:
            attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
            attn = attn * torch.clamp(self.logit_scale, max=math.log(100.0)).exp()
        else:
            attn = (q * 2 ** -0.5) @ k.transpose(-2, -1)
        attn = attn + self.table[self.index.view(-1)].view(ws * ws, ws * ws)
        attn = (attn.view(n, -1, ws * ws, ws * ws) + _window_mask(4, ws, s)).view(-1, ws * ws, ws * ws)
        o = (attn.softmax(-1) @ v).view(n, 4 // ws, 4 // ws, ws, ws, 2).permute(0, 1, 3, 2, 4, 5).reshape(n, 4, 4, 2)
        return torch.roll(o, (s, s), (1, 2)).permute(0, 3, 1, 2).reshape(n, 32)


def dino_aa() -> nn.Module: return _deep(DinoPosEmbed)                                        # noqa: E704
def dino_aa_down() -> nn.Module: return _shallow(lambda: DinoPosEmbed(grid=5))                # noqa: E704
def dino_aa_bilinear() -> nn.Module: return _deep(lambda: DinoPosEmbed(mode="bilinear"))      # noqa: E704
def tome() -> nn.Module: return _deep(ToMeMerge)                                              # noqa: E704
def dino_noaa() -> nn.Module: return _deep(lambda: DinoPosEmbed(antialias=False))             # noqa: E704
def dino_aa_int() -> nn.Module: return _deep(lambda: DinoPosEmbed(grid=2, offset=0.0))        # noqa: E704
def tome_sum() -> nn.Module: return _deep(lambda: ToMeMerge(mode="sum"))                      # noqa: E704
def swin() -> nn.Module: return _deep(SwinWindow)                                             # noqa: E704
def swin_v2() -> nn.Module: return _deep(lambda: SwinWindow(v2=True))                         # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 32)
