"""Held-out batch 44O for issue 30 (session 44): a blind first-run measurement from a fresh angle, **image pre- and
post-processing baked into the exported model, as deployers do to ship one file** (no torchvision), screened with
torch 2.13 / ONNX Runtime 1.32 (CPU), both exporters at their default opset, ORT at ``ORT_DISABLE_ALL`` and
``ORT_ENABLE_ALL``, on uint8 HWC images (2, 12..16, 12..16, 3), float images in [0, 1] and forms30's (6, 32) rows,
after grepping every earlier suite (forms40* hold uint8 casts, wrap-around, gamma, grayscale and bucket forms; none
holds a colour-space conversion, a filter built in forward, or a float16 image pipeline).  Written before the engine
diagnosed any of them (/tmp/h44O/judge.md).  About 25 minutes, some 70 exports (/tmp/h44O/s1..s5.py).

Screened, and what it showed:
* **in float32 the exporters compute what torch computes** (0 or a few float32 ulps, both exporters, both ORT
  levels): uint8 HWC -> ``permute().float() / 255``, BGR flip, ImageNet mean/std; torchvision's ``_rgb2hsv`` /
  ``_hsv2rgb`` written out (max/min branches, division by the chroma, ``fmod``; an einsum of a one-hot sector mask)
  and a hue shift through both; kornia's ``rgb_to_hsv`` (``max(-3)`` indices, ``gather`` of the hue; TorchScript
  writes a file ONNX Runtime refuses: an unused input); sRGB -> Lab (``pow 2.4`` gamma under ``where``, cube roots of
  clamped XYZ); JPEG YCbCr by channel sums and by a 3x3 matmul, ``round().clamp(0, 255).to(uint8)``; grayscale to
  uint8; Gaussian kernels built in forward (``exp`` of an ``arange``, outer product, depthwise ``conv2d`` after a
  reflect pad); unsharp masks with and without a threshold mask ``abs(x - blur) > t``, to uint8, on random and on
  quantised (4-level) images; Sobel magnitude and ``atan2`` angle (replicate pad); a box blur by ``avg_pool2d`` to
  uint8; Reinhard tone mapping with a log-average luminance and the sRGB OETF, ACES filmic; a letterbox (runtime
  ``min`` ratio, bilinear resize, pad of 114 / 255; dynamo only, TorchScript cannot ``round`` a traced size); ESPCN
  ``pixel_shuffle`` plus a bicubic skip to uint8; argmax palettes by indexing and by ``gather``; sigmoid mask
  thresholds to 0 / 255; denormalisation ``(y * std + mean) * 255`` rounded, ``.byte()`` without a clamp, ``+ 0.5``
  then ``clamp_`` then ``to(uint8)``.
* in float16 (a ``.half()`` pipeline, the deployer's smaller file): conv / ``pixel_shuffle`` / bilinear / Gaussian /
  mean-std / gamma in float16 stay within drifttui's float16 budget (4-8e-4 of the scale); a uint8 output of a
  float16 unsharp mask or upscaler is one unit off at a ``round`` (3.9e-3 of 255); Lab in float16 exports with
  neither exporter (an einsum of a float32 matrix and a float16 image).
* what drifts far past the tolerance is one mechanism in new forms: **ONNX Runtime's CPU reads a float16 value
  unrounded on one path and rounded on another** (microsoft/onnxruntime#8787): it has no float16 kernel for
  ``ReduceMax`` / ``ReduceMin`` / ``Div`` / ``Mul`` here, runs them in float32 through Casts it inserts, and drops
  the inserted ``Cast(float -> float16) -> Cast(float16 -> float)`` pair between two of them, while ``Split`` /
  ``Squeeze`` / ``Gather`` read the rounded float16 value; an equality test of a channel against ``amax`` / ``max``
  then fails where torch's holds: the hue of an HSV conversion jumps by 5/6 (the wrong branch), a dominant-channel
  mask flips.  Which file it hits depends on the exporter's lowering and opset (TorchScript's opset-20
  ``ReduceMax`` has no float16 kernel, dynamo's opset-18 one does; dynamo's ``max.dim`` reads through ``Gather``).
  Where the producer and the reader sit in two module calls, each call's own nodes fed torch's values agree and no
  module owned the error before this batch.

Kept (the origin is the module that reads the value):
* ``hsv_half`` (deep; TorchScript): a 3x3 RGB patch decoded from the features in float16 and converted to HSV in
  ``body`` (0.67 off); dynamo within budget (3.7e-4).
* ``hsv_split`` (deep; TorchScript): the same with the float16 ``* 1.25`` in ``body`` and the conversion in its child
  ``body.hsv`` (0.17 off at the output); dynamo within budget.
* ``dominant_split`` (deep; dynamo): ``img.max(1)`` values compared with the red channel in ``body.dominant``, the
  float16 ``/ 4`` in ``body`` (0.12 off); TorchScript exact.
* ``hsv_image`` (shallow, uint8 in; TorchScript): ``x.permute().half() / 255`` in the root, HSV in ``body``; 0.83.
* ``dominant_image`` (shallow, uint8 in; dynamo): ``/ 255`` in float16 in the root, ``max(1)`` mask in ``body``; 1.0.
* ``sharpen_half`` (shallow, uint8 in and out; TorchScript): the float16 unsharp mask, 0.8 held as float16 0.799805
  by the exporter and the root's ``/ 255`` read unrounded by the child's Pad / Conv: one unit at the uint8 output;
  dynamo's one-unit flip is held within the float16 budget.

Clean controls: the same code in float32 (``hsv_f32``, ``hsv_image_f32``, ``sharpen_f32``, ``superres_f32``,
``dominant_image_f32``), and ``superres_half`` (deep: a float16 ESPCN x2 to uint8, read back ``/ 255`` and pooled:
within the float16 budget with both exporters).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep

HALF = torch.float16
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def rgb_to_hsv(img: torch.Tensor) -> torch.Tensor:
    """(N, 3, H, W) RGB in [0, 1] to HSV, hue in [0, 1): the max/min branches, the hue picked by which channel
    equals the max, ``fmod`` into [0, 1) (torchvision's ``_rgb2hsv`` written out)."""
    r, g, b = img.unbind(1)
    maxc, minc = img.amax(1), img.amin(1)
    eqc = maxc == minc
    cr = maxc - minc
    ones = torch.ones_like(maxc)
    s = cr / torch.where(eqc, ones, maxc)
    cr_div = torch.where(eqc, ones, cr)
    rc, gc, bc = (maxc - r) / cr_div, (maxc - g) / cr_div, (maxc - b) / cr_div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = torch.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return torch.stack((h, s, maxc), 1)


class HsvFeatures(nn.Module):
    """colour features of a 3x3 RGB patch decoded from the features (``sigmoid`` of 27 of them) in ``dtype``:
    its HSV, the other 5 features passed through."""

    def __init__(self, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.dtype = dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        img = torch.sigmoid(x[:, :27]).view(n, 3, 3, 3).to(self.dtype)
        return torch.cat([rgb_to_hsv(img).float().flatten(1), x[:, 27:]], 1)


class HsvSplit(nn.Module):
    """``HsvFeatures`` with the conversion in a child module (``hsv``): the patch decoded in float32, rounded to
    ``dtype`` and brightened (``* 1.25``) in ``dtype`` by this module, converted by its child."""

    def __init__(self, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.dtype = dtype
        self.hsv = _Hsv()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        img = torch.sigmoid(x[:, :27]).view(n, 3, 3, 3).to(self.dtype) * 1.25
        return torch.cat([self.hsv(img).float().flatten(1), x[:, 27:]], 1)


class DominantSplit(nn.Module):
    """the dominant-channel mask and label of a 2x4 RGB patch decoded from the features in ``dtype`` (``/ 4`` in
    ``dtype``), computed by a child module (``dominant``); the last 16 features passed through."""

    def __init__(self, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.dtype = dtype
        self.dominant = Dominant()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        img = torch.sigmoid(x[:, :24]).view(n, 3, 2, 4).to(self.dtype) / 4
        return torch.cat([self.dominant(img).flatten(1), x[:, 16:]], 1)


class HsvImage(nn.Module):
    """a deployed colour-analysis model: a uint8 HWC image in, ``/ 255`` in ``dtype``, HSV out (float32)."""

    def __init__(self, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.dtype = dtype
        self.body = _Hsv()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.permute(0, 3, 1, 2).to(self.dtype) / 255).float()


class _Hsv(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rgb_to_hsv(x)


def _gauss(k: int, sigma: float, dtype: torch.dtype) -> torch.Tensor:
    ax = torch.arange(k, dtype=torch.float32) - (k - 1) / 2
    g = torch.exp(-(ax ** 2) / (2 * sigma ** 2))
    g = g / g.sum()
    return (g[:, None] * g[None, :]).to(dtype)


class Unsharp(nn.Module):
    """an unsharp mask with its Gaussian kernel built in forward: ``x + amount * (x - blur(x))``, clamped, back to
    uint8 by ``(y * 255).round()``."""

    def __init__(self, amount: float = 0.8) -> None:
        super().__init__()
        self.amount = amount

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = x.shape[1]
        k = _gauss(5, 1.2, x.dtype).expand(c, 1, 5, 5)
        blur = F.conv2d(F.pad(x, (2, 2, 2, 2), mode="reflect"), k, groups=c)
        y = (x + self.amount * (x - blur)).clamp(0, 1)
        return (y * 255).round().to(torch.uint8)


class SharpenImage(nn.Module):
    """a deployed sharpening model: uint8 HWC in, ``/ 255`` in ``dtype``, the unsharp mask, uint8 NCHW out."""

    def __init__(self, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.dtype = dtype
        self.body = Unsharp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.permute(0, 3, 1, 2).to(self.dtype) / 255)


class SuperRes(nn.Module):
    """an ESPCN-style x2 upscaler in ``dtype`` on a 2-channel 4x4 image decoded from the features: a conv to 4x the
    channels, ``pixel_shuffle``, a bilinear skip, quantised to uint8 as it is shipped, then read back ``/ 255`` and
    pooled to the 4x4 grid for the next stage."""

    def __init__(self, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.dtype = dtype
        self.conv = nn.Conv2d(2, 8, 3, padding=1).to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        img = torch.sigmoid(x).view(n, 2, 4, 4).to(self.dtype)
        up = F.pixel_shuffle(self.conv(img), 2) * 0.1 + F.interpolate(img.float(), scale_factor=2,
                                                                        mode="bilinear").to(self.dtype)
        q = (up.clamp(0, 1) * 255).round().to(torch.uint8)
        return F.avg_pool2d(q.float() / 255, 2).flatten(1)


class Dominant(nn.Module):
    """which channel dominates each pixel: ``img.max(1)`` (values and indices), a mask of the pixels whose red
    channel is the max, and the index as a palette label."""

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        v, i = img.max(1)
        return torch.stack(((v == img[:, 0]).float(), i.float()), 1)


class DominantImage(nn.Module):
    """a deployed colour-label model: uint8 HWC in, ``/ 255`` in ``dtype``, the dominant-channel mask and label."""

    def __init__(self, dtype: torch.dtype = HALF) -> None:
        super().__init__()
        self.dtype = dtype
        self.body = Dominant()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.permute(0, 3, 1, 2).to(self.dtype) / 255)


def hsv_half() -> nn.Module: return _deep(HsvFeatures)                                            # noqa: E704
def hsv_f32() -> nn.Module: return _deep(lambda: HsvFeatures(torch.float32))                      # noqa: E704
def hsv_split() -> nn.Module: return _deep(HsvSplit)                                            # noqa: E704
def dominant_split() -> nn.Module: return _deep(DominantSplit)                                    # noqa: E704
def hsv_image() -> nn.Module: return HsvImage().eval()                                            # noqa: E704
def hsv_image_f32() -> nn.Module: return HsvImage(torch.float32).eval()                           # noqa: E704
def sharpen_half() -> nn.Module: return SharpenImage().eval()                                     # noqa: E704
def sharpen_f32() -> nn.Module: return SharpenImage(torch.float32).eval()                         # noqa: E704
def dominant_image() -> nn.Module: return DominantImage().eval()                                  # noqa: E704
def dominant_image_f32() -> nn.Module: return DominantImage(torch.float32).eval()                 # noqa: E704
def superres_half() -> nn.Module: return _deep(SuperRes)                                          # noqa: E704
def superres_f32() -> nn.Module: return _deep(lambda: SuperRes(torch.float32))                    # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 32)


def image_inputs() -> torch.Tensor:
    return torch.randint(0, 256, (2, 12, 12, 3), dtype=torch.uint8)
