"""Held-out batch 47E for issue 30 (session 47): a blind first-run measurement from a fresh angle, **image
restoration and super-resolution networks** (no torchvision), screened with torch 2.13 / ONNX Runtime 1.32 (CPU),
both exporters at their default opset, ORT at ``ORT_DISABLE_ALL`` and ``ORT_ENABLE_ALL``, on float images in [0, 1]
(2, 3, 8, 8) / (2, 3, 7, 9), uint8 images and forms30's (6, 32) rows, after grepping every earlier suite
(forms40a holds the antialiased resizes, forms44o a float16 ESPCN and JPEG YCbCr, forms35 a uint8 resize; none a
quantisation error or an RRDB / SwinIR block).  Written before the engine diagnosed any of them
(/tmp/h47e/judge.md).  About 20 minutes, some 120 exports (/tmp/h47e/s1.py .. s5.py).

Screened, and what it showed:
* **in float32 the exporters compute what torch computes** (a few float32 ulps, both exporters, both ORT levels):
  an RRDBNet (dense blocks, ``* 0.2`` residual scaling, LeakyReLU 0.2, nearest x2), ESPCN ``pixel_shuffle`` with a
  bicubic / ``nearest-exact`` (dynamo; TorchScript refuses it) skip, to uint8 by ``clamp(0, 1) * 255`` ``round``;
  ``pixel_unshuffle`` -> conv -> ``pixel_shuffle``; nearest / bilinear / bicubic at fractional scale factors (1.5,
  1.7 recomputed, 2.3, 0.6) on odd sizes; a DnCNN residual denoiser with reflect / replicate padding (and under
  autocast); sRGB EOTF / OETF (``pow(2.4)`` under ``where`` thresholds); matlab's Y-channel SR (RGB -> YCbCr by the
  BT.601 coefficients, the Y upscaled, CbCr bicubic, back to RGB, to uint8); EDSR's ``quantize`` (``mul(255)
  .clamp(0, 255).round().div(255)``); an RCAN channel-attention block; a SwinIR-lite block (window partition,
  relative-position bias gathered from a table, shifted windows by ``roll`` with the -100 mask); PSNR in the model.
* in float16 (``.half()`` networks): RRDB, ESPCN, unshuffle, DnCNN, RCAB, SwinIR, YCbCr stay within drifttui's
  float16 budget (2e-4 - 1.5e-3 of the scale); to uint8 they are one unit off at a ``round`` (3.9e-3 of 255; 44o's
  form); an RRDB to uint8 5 units (its float16 accumulation).
* a uint8 image resized by torch (``F.interpolate(uint8, mode="bilinear")``) is 1-2 units of 255 off: forms35's
  ``resize_uint8`` (not kept; the engine's re-trace table holds torch's definition and verified it in the screen).
* what drifts far past the tolerance is one mechanism in new forms: **a quantisation error read after float16
  ops** (``round(y * 255) - y * 255``: EDSR's ``quantize`` kept as a rounding-noise / dithering map).  ONNX Runtime's
  CPU runs float16 ops it has no kernel for through Casts it inserts and drops the float16 rounding of a value whose
  reader it casts back to float32 (microsoft/onnxruntime#8787): the ``Mul`` by 255 reads the ``sigmoid`` (or the
  conv's ``pixel_shuffle`` / ``clamp``) unrounded, and the ``round`` turns that last-bit difference into a whole
  unit: 0.2-1.9x the output's scale, both exporters, both ORT levels.  The same code in float32 is exact to 4e-5.

Kept (each drifts with both exporters at both ORT levels; the origin is always ``body``):
* ``quant_half`` (deep): a float16 ``Linear`` + ``sigmoid``, the quantisation error.
* ``quant_amp`` (shallow): the same under ``torch.autocast`` (float16).
* ``shuffle_half`` (deep): the features read as a 2x4x4 image, a float16 3x3 conv (reflect padding), ESPCN
  ``pixel_shuffle`` x2, ``clamp(0, 1)``, the quantisation error map average-pooled back to 32 values.
* ``conv_half`` (shallow, float images in): a float32 conv stem, then a float16 3x3 conv (reflect) + ``sigmoid``
  and the error map.

Kept after the first run was measured (screened before it, as ``eotf_half``, but not in the judge: its 2e-3 looked
like the float16 budget 44o's float16 gamma sat in; here the weights are float32, the model's own ``.half()`` is held
to the float32 rule): ``srgb_half`` (shallow, float images in): a float32 conv stem, then the sRGB EOTF of the
image cast to float16 (``where`` threshold 0.04045, ``/ 12.92``, ``((y + 0.055) / 1.055) ** 2.4``): 1.3e-3 of the
scale, both exporters; two float16 stories at once (torch holds the Python scalars in float32, and ONNX Runtime drops
a rounding); control ``srgb_f32``.

Clean controls (the same code where nothing drifts): ``quant_f32`` (deep), ``quant_amp_off`` (shallow, autocast
disabled), ``shuffle_f32`` (deep), ``conv_f32`` (shallow), ``swin_block`` (shallow, a SwinIR-lite shifted-window
block on float images, float32).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
HALF = torch.float16


class ConvQuantError(nn.Module):
    """a restoration head in ``dtype``: a 3x3 conv (reflect padding), ``pixel_shuffle`` x2 when ``shuffle``, the
    image ``sigmoid`` / ``clamp(0, 1)``, and its quantisation error ``round(y * 255) - y * 255`` (EDSR's quantize,
    kept as a rounding-noise map); ``rows``: the (n, 32) features read as a (n, 2, 4, 4) image and the error map
    average-pooled back to 32 values."""

    def __init__(self, dtype: torch.dtype = HALF, shuffle: bool = False, rows: bool = False) -> None:
        super().__init__()
        cin = 2 if rows else 3
        self.conv = nn.Conv2d(cin, cin * (4 if shuffle else 1), 3, 1, 1, padding_mode="reflect").to(dtype)
        self.dtype, self.shuffle, self.rows = dtype, shuffle, rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        img = x.view(n, 2, 4, 4) if self.rows else x
        f = self.conv(img.to(self.dtype))
        y = F.pixel_shuffle(f, 2).clamp(0, 1) if self.shuffle else torch.sigmoid(f)
        err = y.mul(255).round().float() - y.float() * 255
        return F.avg_pool2d(err, 2).reshape(n, WIDTH) if self.rows else err


class ImageShallow(nn.Module):
    """a float32 3x3 conv stem on the image, then the form (``body``)."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.stem, self.body = nn.Conv2d(3, 3, 3, 1, 1), body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(torch.sigmoid(self.stem(x)))


class SrgbDecode(nn.Module):
    """the sRGB EOTF of an image the model casts to ``dtype`` (its float32 weights kept): ``where(y <= 0.04045,
    y / 12.92, ((y + 0.055) / 1.055) ** 2.4)``, read back as float32."""

    def __init__(self, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.dtype = dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.to(self.dtype)
        return torch.where(y <= 0.04045, y / 12.92, ((y + 0.055) / 1.055).pow(2.4)).float()


class QuantError(nn.Module):
    """a head in ``dtype`` (``autocast``: under ``torch.autocast``), ``y = sigmoid``, the quantisation error
    ``round(clamp(y * 255)) - y * 255`` (EDSR's quantize, kept as a rounding-noise output)."""

    def __init__(self, dtype: torch.dtype = HALF, autocast: bool = False) -> None:
        super().__init__()
        self.lin, self.dtype, self.autocast = nn.Linear(WIDTH, WIDTH), dtype, autocast
        if not autocast:
            self.lin.to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=HALF, enabled=self.autocast):
            y = torch.sigmoid(self.lin(x if self.autocast else x.to(self.dtype)))
            q = y.mul(255).clamp(0, 255).round()
        return q.float() - y.float() * 255


class SwinBlock(nn.Module):
    """SwinIR-lite: conv in, LayerNorm, shifted 4x4 windows (``roll``, the -100 mask), window attention with a
    relative-position bias gathered from a table, ``roll`` back, residual, conv out."""

    def __init__(self, dim: int = 8, ws: int = 4, heads: int = 2, shift: int = 2) -> None:
        super().__init__()
        self.ws, self.h, self.shift = ws, heads, shift
        self.qkv, self.proj, self.norm = nn.Linear(dim, dim * 3), nn.Linear(dim, dim), nn.LayerNorm(dim)
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads) * 0.5)
        c = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + ws - 1
        self.register_buffer("idx", rel[..., 0] * (2 * ws - 1) + rel[..., 1])
        self.first, self.last = nn.Conv2d(3, dim, 3, 1, 1), nn.Conv2d(dim, 3, 3, 1, 1)

    def mask(self, hh: int, ww: int) -> torch.Tensor:
        img, cnt, ws, sh = torch.zeros(1, hh, ww, 1), 0, self.ws, self.shift
        for hs in (slice(0, -ws), slice(-ws, -sh), slice(-sh, None)):
            for wsl in (slice(0, -ws), slice(-ws, -sh), slice(-sh, None)):
                img[:, hs, wsl, :] = cnt
                cnt += 1
        mw = img.view(1, hh // ws, ws, ww // ws, ws, 1).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws)
        m = mw[:, None] - mw[:, :, None]
        return m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.first(x)
        b, c, hh, ww = f.shape
        ws, a2 = self.ws, self.ws * self.ws
        t0 = f.permute(0, 2, 3, 1)
        t = torch.roll(self.norm(t0), (-self.shift, -self.shift), (1, 2))
        w = t.view(b, hh // ws, ws, ww // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, a2, c)
        qkv = self.qkv(w).reshape(w.shape[0], a2, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * (c // self.h) ** -0.5, qkv[1], qkv[2]
        bias = self.table[self.idx.view(-1)].view(a2, a2, -1).permute(2, 0, 1)
        a = (q @ k.transpose(-2, -1) + bias).view(b, -1, self.h, a2, a2) + self.mask(hh, ww)[None, :, None]
        o = (a.view(-1, self.h, a2, a2).softmax(-1) @ v).transpose(1, 2).reshape(w.shape[0], a2, c)
        o = self.proj(o).view(b, hh // ws, ww // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(b, hh, ww, c)
        o = torch.roll(o, (self.shift, self.shift), (1, 2))
        return self.last((t0 + o).permute(0, 3, 1, 2))


def _seeded(make) -> nn.Module:
    torch.manual_seed(0)
    return make().eval()


def _image(make) -> nn.Module:
    torch.manual_seed(0)
    return ImageShallow(make()).eval()


def shuffle_half() -> nn.Module: return _deep(lambda: ConvQuantError(HALF, True, True))             # noqa: E704
def shuffle_f32() -> nn.Module: return _deep(lambda: ConvQuantError(torch.float32, True, True))     # noqa: E704
def conv_half() -> nn.Module: return _image(ConvQuantError)                                         # noqa: E704
def conv_f32() -> nn.Module: return _image(lambda: ConvQuantError(torch.float32))                   # noqa: E704
def srgb_half() -> nn.Module: return _image(SrgbDecode)                                             # noqa: E704
def srgb_f32() -> nn.Module: return _image(lambda: SrgbDecode(torch.float32))                       # noqa: E704
def quant_half() -> nn.Module: return _deep(QuantError)                                            # noqa: E704
def quant_f32() -> nn.Module: return _deep(lambda: QuantError(torch.float32))                      # noqa: E704
def quant_amp() -> nn.Module: return _shallow(lambda: QuantError(torch.float32, True))             # noqa: E704
def quant_amp_off() -> nn.Module: return _shallow(lambda: QuantError(torch.float32, False))         # noqa: E704
def swin_block() -> nn.Module: return _seeded(SwinBlock)                                           # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


def image_inputs() -> torch.Tensor:
    return torch.rand(2, 3, 8, 8)
