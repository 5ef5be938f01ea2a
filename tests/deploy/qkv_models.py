"""A small pre-norm transformer with a fused ``attn.qkv`` Linear (timm / nanoGPT style, not
nn.MultiheadAttention), and drifts planted in a reduced-precision copy of it after conversion, found
by content (never by name): an int8 weight's integers moved, its scale multiplied, a float16 weight
multiplied.  Drifttui model spec targets: ``qkv_models.py:qkv_tf`` / ``qkv_models.py:seq``."""
from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()


def qkv_tf():
    import torch
    from torch import nn

    class Attn(nn.Module):
        def __init__(self, d: int = 32, heads: int = 4) -> None:
            super().__init__()
            self.heads, self.qkv, self.proj = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5, -1)
            return self.proj((a @ v).transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self, d: int = 32) -> None:
            super().__init__()
            self.norm1, self.attn, self.norm2 = nn.LayerNorm(d), Attn(d), nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class TF(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([Block(), Block()])
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.head(x)

    torch.manual_seed(0)
    return TF().eval()


def seq():
    import torch

    return torch.randn(1, 8, 32)


def spec(fn: str) -> str:
    return f"{HERE}:{fn}"


def export(exporter: str, folder: Path) -> Path:
    from drifttui.core.model.export import export_model
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.spec import parse_input_spec

    args, kwargs = build_source(parse_input_spec(spec("seq")), 0, False, None, None).sample(0)
    folder.mkdir(parents=True, exist_ok=True)
    return export_model(qkv_tf(), args, kwargs, exporter, folder)


def feeds(name: str):
    def feed(i: int) -> dict[str, np.ndarray]:
        return {name: np.random.RandomState(100 + i).randn(1, 8, 32).astype(np.float32)}
    return feed


def _closest(model, target: np.ndarray, types: tuple[int, ...]):
    """The initializer of one of ``types`` that carries ``target`` (a torch weight), by content: as stored
    or transposed, scaled per output channel too (a BatchNorm folded into its Conv: every row's cosine)."""
    from onnx import numpy_helper

    best, best_cos = None, 0.0
    for t in model.graph.initializer:
        if t.data_type not in types or len(t.dims) < 2 or int(np.prod(t.dims)) != target.size:
            continue
        a = numpy_helper.to_array(t).astype(np.float64)
        for c in ((target, target.T) if target.ndim == 2 else (target.reshape(a.shape),)):
            if a.shape != c.shape:
                continue
            rows = [abs(float(p @ q)) / (np.linalg.norm(p) * np.linalg.norm(q) + 1e-30)
                    for p, q in zip(a.reshape(a.shape[0], -1), c.reshape(c.shape[0], -1))]
            cos = min(rows)
            if cos > best_cos:
                best, best_cos = t, cos
    assert best is not None and best_cos > 0.9, "the weight is not in the file"
    return best


def _scale_of(model, weight: str) -> str:
    """The scale its reader dequantizes an int8 weight with (DequantizeLinear / QLinear*'s next input,
    quantize_dynamic's ``<name>_scale``)."""
    for n in model.graph.node:
        if weight in n.input:
            i = list(n.input).index(weight)
            if n.op_type in ("MatMulInteger", "ConvInteger"):
                return weight.replace("_quantized", "_scale")
            return n.input[i + 1]
    raise AssertionError(f"no reader of {weight}")


def plant(src: Path, dst: Path, module: str, kind: str, factor: float = 1.3) -> Path:
    """``module``'s weight in the converted file: ``int8`` integers moved by up to 20 levels (seeded),
    ``scale`` its int8 scale x ``factor``, ``float16`` its float16 values x ``factor``."""
    return plant_weight(src, dst, qkv_tf().get_submodule(module).weight.detach().numpy(), kind, factor)


def plant_weight(src: Path, dst: Path, w: np.ndarray, kind: str, factor: float = 1.3) -> Path:
    """``plant`` for any model: ``w`` is the torch weight the file's initializer carries."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(src))
    inits = {t.name: t for t in m.graph.initializer}
    if kind == "float16":
        t = _closest(m, w, (10,))
        a = numpy_helper.to_array(t)
        t.CopyFrom(numpy_helper.from_array((a.astype(np.float32) * factor).astype(np.float16), t.name))
    else:
        t = _closest(m, w, (2, 3))
        if kind == "int8":
            a = numpy_helper.to_array(t)
            lo, hi = (-127, 127) if a.dtype == np.int8 else (0, 255)
            moved = np.clip(a.astype(np.int32) + np.random.RandomState(0).randint(-20, 21, a.shape), lo, hi)
            t.CopyFrom(numpy_helper.from_array(moved.astype(a.dtype), t.name))
        else:
            s = inits[_scale_of(m, t.name)]
            s.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(s) * factor).astype(np.float32), s.name))
    onnx.save(m, str(dst))
    return dst
