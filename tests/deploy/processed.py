"""Processed files for the deploy suite: small seeded models, exported, run through the real tools.

Models (own classes, seeded): a CNN with Conv+BN+ReLU blocks and a 2-layer pre-norm transformer.
Pipelines: onnxsim, onnxslim, ORT offline optimisation (basic / extended / all), and
onnxruntime.transformers' optimizer.  Drifts are injected *after* the pipeline, into the file a
user would deploy, by content (never by a name the tool may have changed): a weight scaled, a
normalisation epsilon changed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn as nn

HERE = Path(__file__).resolve()
INPUTS = {"cnn": "shape:1x3x32x32", "tf": "shape:1x10x16", "perm": "shape:1x3x8x8", "frelu": "shape:1x3x16x16",
          "heads": "shape:1x6x16", "uattn": "shape:1x8x4x4"}


class Block(nn.Module):
    def __init__(self, ci: int, co: int):
        super().__init__()
        self.conv = nn.Conv2d(ci, co, 3, padding=1)
        self.bn = nn.BatchNorm2d(co)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1, self.b2 = Block(3, 16), Block(16, 32)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.pool(self.b2(self.b1(x))).flatten(1))


class Layer(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TF(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(16, 32)
        self.layers = nn.ModuleList([Layer(), Layer()])
        self.head = nn.Linear(32, 8)

    def forward(self, x):
        x = self.emb(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class Perm(nn.Module):
    """A ReLU computed channels-last (permute there and back, as ConvNeXt-style code does): ORT's
    transpose optimiser cancels the pair, so the ReLU's value in the optimised file is NCHW while
    torch's is NHWC.  8 channels on an 8x8 input: both layouts have the same shape [1, 8, 8, 8]."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.act(self.conv(x).permute(0, 2, 3, 1))
        return self.conv2(y.permute(0, 3, 1, 2))


class FRelu(nn.Module):
    """Conv+BN blocks with a *functional* ``torch.relu`` after each (the root's own op, no module):
    ORT extended fuses the Relu into the Conv (FusedConv, activation=Relu), so the file has no value
    for the BatchNorm's output, only the root's Relu of it."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return self.head(y.mean((2, 3)))


class Heads(nn.Module):
    """One attention head split (Whisper's pattern): a Linear with a bias on a 3-D input, viewed
    into heads.  ORT basic's MatMulAddFusion makes the Linear Reshape, Gemm, Reshape, and its ReshapeFusion
    merges that Reshape into the head split's: the file has no value of the Linear's shape, only its
    flattened Gemm output, read by a scope-less Reshape."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.v_proj = nn.Linear(16, 16)
        self.out = nn.Linear(16, 16)

    def forward(self, x):
        h = self.norm(x)
        q = h.view(1, 6, 2, 8).transpose(1, 2)
        v = self.v_proj(h).view(1, 6, 2, 8).transpose(1, 2)
        a = torch.softmax(q @ q.transpose(-1, -2), dim=-1) @ v
        return self.out(a.transpose(1, 2).reshape(1, 6, 16))


class UAttn(nn.Module):
    """A UNet's attention block (diffusers' Attention on a 4-D input): NCHW flattened to tokens, the
    output projection ``to_out.0`` viewed back to NCHW (``transpose(-1, -2).reshape``).  ORT basic
    makes the Linear Reshape, Gemm, Reshape, merges that Reshape into the way back's, and moves the
    Transpose: the Linear's value is gone, its Gemm output reaches NCHW only through layout ops."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.norm = nn.GroupNorm(2, 8)
        self.to_q, self.to_k, self.to_v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
        self.to_out = nn.ModuleList([nn.Linear(8, 8), nn.Dropout(0.0)])
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        x = self.conv(x)
        b, c, h, w = x.shape
        t = self.norm(x).view(b, c, h * w).transpose(1, 2)
        q, k, v = (m(t).view(b, -1, 2, 4).transpose(1, 2) for m in (self.to_q, self.to_k, self.to_v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, -1, c)
        y = self.to_out[1](self.to_out[0](a)).transpose(-1, -2).reshape(b, c, h, w)
        return self.conv2(y + x)


def _seeded(cls: type) -> nn.Module:
    torch.manual_seed(0)
    m = cls()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2)
            mod.weight.data.uniform_(0.5, 1.5)
    return m.eval()


def cnn() -> nn.Module:
    return _seeded(CNN)


def tf() -> nn.Module:
    return _seeded(TF)


def perm() -> nn.Module:
    return _seeded(Perm)


def frelu() -> nn.Module:
    return _seeded(FRelu)


def heads() -> nn.Module:
    return _seeded(Heads)


def uattn() -> nn.Module:
    return _seeded(UAttn)


def spec(name: str) -> str:
    return f"{HERE}:{name}"


def export(name: str, exporter: str, folder: Path) -> Path:
    from drifttui.core.model.export import export_model

    model = globals()[name]()
    x = torch.randn(*[int(d) for d in INPUTS[name].split(":")[1].split("x")])
    path = export_model(model, (x,), {}, exporter, folder, name=f"{name}-{exporter}.onnx")
    import onnx

    # one self-contained file: the tools' outputs land in other folders, and ORT's offline file
    # would reference the exporter's .data file by a relative name
    proto = onnx.load(str(path))
    out = folder / f"{name}-{exporter}-embedded.onnx"
    onnx.save(proto, str(out))
    return out


# --- the pipelines ---------------------------------------------------------------------

def onnxsim(src: Path, dst: Path) -> Path:
    import onnx
    import onnxsim as tool

    model, ok = tool.simplify(onnx.load(str(src)))
    assert ok
    onnx.save(model, str(dst))
    return dst


def onnxslim(src: Path, dst: Path) -> Path:
    import onnx
    import onnxslim as tool

    onnx.save(tool.slim(onnx.load(str(src))), str(dst))
    return dst


def onnxoptimizer(src: Path, dst: Path) -> Path:
    """The ONNX Optimizer's fuse and elimination passes (BN into Conv, transposes, pads, ...)."""
    import onnx
    import onnxoptimizer as tool

    onnx.save(tool.optimize(onnx.load(str(src)), tool.get_fuse_and_elimination_passes()), str(dst))
    return dst


def ort_offline(level: str) -> Callable[[Path, Path], Path]:
    def run(src: Path, dst: Path) -> Path:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                       "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                                       "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
        so.optimized_model_filepath = str(dst)
        ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
        return dst
    return run


def transformers_optimizer(src: Path, dst: Path) -> Path:
    from onnxruntime.transformers import optimizer

    opt = optimizer.optimize_model(str(src), model_type="bert", num_heads=4, hidden_size=32, opt_level=0)
    opt.save_model_to_file(str(dst))
    return dst


PIPELINES: dict[str, Callable[[Path, Path], Path]] = {
    "onnxsim": onnxsim, "onnxslim": onnxslim, "onnxoptimizer": onnxoptimizer, "ort-basic": ort_offline("basic"),
    "ort-extended": ort_offline("extended"), "ort-all": ort_offline("all"),
    "transformers-optimizer": transformers_optimizer,
}


# --- drifts injected after the pipeline --------------------------------------------------

def _weight_like(model: Any, target: np.ndarray) -> Any:
    """The initializer that carries ``target`` (a torch weight): by content, equal, transposed or
    scaled per output channel (folded), else by shape; never by name."""
    from onnx import numpy_helper

    best, best_cos = None, 0.0
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t).astype(np.float32)
        for cand in (target, target.T if target.ndim == 2 else target):
            if a.size != cand.size:
                continue
            x, y = a.reshape(-1), cand.reshape(-1)
            cos = abs(float(x @ y) / (np.linalg.norm(x) * np.linalg.norm(y) + 1e-12))
            if a.shape == cand.shape and a.ndim >= 2:
                rows = [abs(float(p @ q) / (np.linalg.norm(p) * np.linalg.norm(q) + 1e-12))
                        for p, q in zip(a.reshape(a.shape[0], -1), cand.reshape(cand.shape[0], -1))]
                cos = max(cos, min(rows))
            if cos > best_cos:
                best, best_cos = t, cos
    if best is not None and best_cos > 0.9:
        return best
    # ORT's NCHWc Conv keeps the weight reordered into its blocked layout, its channels padded with
    # zeros to the block (8 with AVX2, 16 with AVX-512): the one tensor holding the same values
    same = [t for t in model.graph.initializer if _same_values(numpy_helper.to_array(t), target)]
    assert len(same) == 1, "the weight is not in the file"
    return same[0]


def _same_values(a: np.ndarray, target: np.ndarray) -> bool:
    """``a`` holds ``target``'s values in another order, plus zeros (a blocked, padded layout)."""
    if a.size < target.size:
        return False
    x, y = np.sort(a[a != 0].astype(np.float32)), np.sort(target[target != 0].astype(np.float32))
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-6, atol=0))


def scale_weight(path: Path, module_weight: np.ndarray, factor: float, dst: Path) -> Path:
    """Every element of the initializer carrying ``module_weight`` times ``factor`` (any layout)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    t = _weight_like(model, module_weight)
    a = numpy_helper.to_array(t)
    t.CopyFrom(numpy_helper.from_array((a * factor).astype(a.dtype), t.name))
    onnx.save(model, str(dst))
    return dst


def set_norm_epsilon(path: Path, k: int, eps: float, dst: Path) -> Path:
    """The ``k``-th layer norm (LayerNormalization or a Skip*LayerNormalization, in graph order) gets ``eps``."""
    import onnx

    model = onnx.load(str(path))
    norms = [n for n in model.graph.node if n.op_type.endswith("LayerNormalization")]
    node = norms[k]
    for a in node.attribute:
        if a.name == "epsilon":
            a.f = eps
            break
    else:
        node.attribute.append(onnx.helper.make_attribute("epsilon", eps))
    onnx.save(model, str(dst))
    return dst


def check(name: str, onnx_path: Path, samples: int = 3, reference: Path | None = None) -> Any:
    """drifttui's verdict on the file, as a user runs it (`drifttui check MODEL --onnx FILE`)."""
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    cfg = Config(model=spec(name), onnx=str(onnx_path), inputs=INPUTS[name], samples=samples,
                 reference_onnx=str(reference) if reference else None)
    return run_once(cfg).result


def covered(result: Any) -> int:
    c = result.coverage
    return c.mapped + c.fused
