"""Reduced-precision files made with the real converters, from the real-architecture zoo (seeded
random weights, nothing downloaded): float16 (onnxruntime.transformers.float16, onnxconverter-common),
int8 (onnxruntime.quantization quantize_dynamic, quantize_static QDQ with a calibration reader)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import onnx

ARCHS = Path(__file__).resolve().parent.parent / "archs"
ZOO = ARCHS / "zoo.py"
if str(ARCHS) not in sys.path:
    sys.path.insert(0, str(ARCHS))


def spec(fn: str) -> str:
    return f"{ZOO}:{fn}"


def export(fn: str, inputs: str, exporter: str, folder: Path, spec_of: Optional[Callable[[str], str]] = None) -> Path:
    """The raw export drifttui itself would make (its exporter wrapper, sample 0 of ``inputs``);
    ``spec_of``: the factories' module (default: this suite's zoo)."""
    spec_of = spec_of or spec
    from drifttui.core.model.export import export_model
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.model.spec import parse_input_spec, parse_model_spec

    model = load_torch_model(parse_model_spec(spec_of(fn)))
    args, kwargs = build_source(parse_input_spec(spec_of(inputs)), 0, False, None, None).sample(0)
    folder.mkdir(parents=True, exist_ok=True)
    return export_model(model, args, kwargs, exporter, folder)


def fp16_ort(src: Path, dst: Path, **kw: Any) -> Path:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    onnx.save(convert_float_to_float16(onnx.load(str(src)), keep_io_types=True, **kw), str(dst))
    return dst


def fp16_occ(src: Path, dst: Path, **kw: Any) -> Path:
    from onnxconverter_common import float16

    onnx.save(float16.convert_float_to_float16(onnx.load(str(src)), keep_io_types=True, **kw), str(dst))
    return dst


def int8_dynamic(src: Path, dst: Path, **kw: Any) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    kw.setdefault("weight_type", QuantType.QInt8)
    quantize_dynamic(str(src), str(dst), **kw)
    return dst


def int8_qoperator(src: Path, dst: Path, feeds: Callable[[int], dict[str, np.ndarray]], n: int = 16, **kw: Any) -> Path:
    """quantize_static in the QOperator format (QLinearConv, QGemm...), calibrated like int8_qdq."""
    from onnxruntime.quantization import QuantFormat

    return int8_qdq(src, dst, feeds, n, quant_format=QuantFormat.QOperator, **kw)


def int8_qdq(src: Path, dst: Path, feeds: Callable[[int], dict[str, np.ndarray]], n: int = 16, **kw: Any) -> Path:
    """quantize_static in the QDQ format, calibrated on ``feeds(0..n-1)`` (a CalibrationDataReader)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([feeds(i) for i in range(n)])

        def get_next(self) -> Any:
            return next(self.it, None)

    kw.setdefault("quant_format", QuantFormat.QDQ)
    quantize_static(str(src), str(dst), Reader(), **kw)
    return dst


# --- two small models for the fast subset (make test); the zoo's timm/transformers models are the long tail
def _small():
    import torch
    from torch import nn

    class CNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
            self.b1 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.ReLU())
            self.b2 = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.ReLU())
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            return self.fc(self.pool(self.b2(self.b1(self.stem(x)))).flatten(1))

    class Block(nn.Module):
        def __init__(self, d: int = 32) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))

        def forward(self, x):
            y = self.norm1(x)
            x = x + self.attn(y, y, y, need_weights=False)[0]
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

    return torch, CNN, TF


def small_cnn():
    torch, CNN, _ = _small()
    torch.manual_seed(0)
    return CNN().eval()


def folded_cnn():
    """Two Conv+BatchNorm blocks whose BatchNorms have trained-looking statistics (scale far from 1):
    an exporter that folds them stores weights torch never holds."""
    import torch
    from torch import nn

    torch.manual_seed(3)
    body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    with torch.no_grad():
        for bn in (body[1], body[4]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.05, 4.0)
            bn.weight.uniform_(0.3, 3.0)
            bn.bias.uniform_(-0.5, 0.5)
    return body.eval()


def small_tf():
    torch, _, TF = _small()
    torch.manual_seed(0)
    return TF().eval()


def heavy_cnn():
    """A CNN whose first conv has an outlier channel (x40: its output is heavy-tailed per tensor) that
    the next conv reads scaled down: per-tensor int8 activations round every other channel of that
    value to a few levels, so only keeping both convs in float32 (the float value flowing between
    them) brings the file within budget."""
    import torch
    from torch import nn

    class Heavy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
            self.b1 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.ReLU())
            self.b2 = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.ReLU())
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            return self.fc(self.pool(self.b2(self.b1(self.stem(x)))).flatten(1))

    torch.manual_seed(0)
    m = Heavy().eval()
    with torch.no_grad():
        m.stem[0].weight[0] *= HEAVY
        m.stem[0].bias[0] = abs(float(m.stem[0].bias[0])) * HEAVY
        m.b1[0].weight[:, 0] /= HEAVY
    return m


HEAVY = 40.0


def _tail_cnn(relu6: bool):
    """A CNN whose first conv's output is heavy-tailed (one channel x TAIL, the next conv reads it
    scaled down), followed by a ReLU6 (the tail is clipped in PyTorch too: a static range [0, 6]
    that clips it costs nothing) or a ReLU (the tail carries part of the signal: clipping it costs)."""
    import torch
    from torch import nn

    class Tail(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU6() if relu6 else nn.ReLU())
            self.b1 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.ReLU())
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            return self.fc(self.pool(self.b1(self.stem(x))).flatten(1))

    torch.manual_seed(0)
    m = Tail().eval()
    with torch.no_grad():
        m.stem[0].weight[0] *= TAIL
        m.b1[0].weight[:, 0] /= TAIL / 4
    return m


TAIL = 12.0


def tail_relu6():
    return _tail_cnn(True)


def tail_relu():
    return _tail_cnn(False)


def img32_wide():
    """img32 x WIDE: calibrating on it gives static scales WIDE times coarser than the checked samples need."""
    return img32() * WIDE


WIDE = 10.0


def small_emb():
    """An embedding table and a Linear head: quantize_dynamic quantizes the table (Gather on int8
    rows, then DequantizeLinear)."""
    import torch
    from torch import nn

    class Emb(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(64, 32)
            self.head = nn.Linear(32, 10)

        def forward(self, ids):
            return self.head(torch.relu(self.emb(ids)))

    torch.manual_seed(0)
    return Emb().eval()


def ids8():
    import torch

    return torch.randint(0, 64, (1, 8))


def img32():
    import torch

    return torch.randn(1, 3, 32, 32)


def seq8():
    import torch

    return torch.randn(1, 8, 32)


def local_spec(fn: str) -> str:
    return f"{Path(__file__).resolve()}:{fn}"


def export_local(fn: str, inputs: str, exporter: str, folder: Path) -> Path:
    from drifttui.core.model.export import export_model
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.loading import load_torch_model
    from drifttui.core.model.spec import parse_input_spec, parse_model_spec

    model = load_torch_model(parse_model_spec(local_spec(fn)))
    args, kwargs = build_source(parse_input_spec(local_spec(inputs)), 0, False, None, None).sample(0)
    folder.mkdir(parents=True, exist_ok=True)
    return export_model(model, args, kwargs, exporter, folder)


def feeds_of(inputs: str, name: str) -> Callable[[int], dict[str, np.ndarray]]:
    """Sample i of ``inputs`` as drifttui draws it (torch.manual_seed(i), then the callable): the
    calibration data of a static quantization."""
    import torch

    fn = globals()[inputs]

    def feed(i: int) -> dict[str, np.ndarray]:
        torch.manual_seed(i)
        return {name: fn().numpy()}
    return feed


def lstm_gru():
    """An LSTM then a GRU then a Linear: quantize_dynamic makes a DynamicQuantizeLSTM (its W, R, B
    read side by side, not as (w, scale, zero point) triples)."""
    import torch
    from torch import nn

    class RNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(12, 24, batch_first=True)
            self.gru = nn.GRU(24, 16, batch_first=True)
            self.fc = nn.Linear(16, 4)

        def forward(self, x):
            y, _ = self.lstm(x)
            z, _ = self.gru(y)
            return self.fc(z[:, -1])

    torch.manual_seed(0)
    return RNN().eval()


def seq10():
    import torch

    return torch.randn(1, 10, 12)


def encoder_relu():
    """torch's own TransformerEncoderLayer (a functional ReLU after linear1) between two Linears, with
    biases and norm scales away from 0 and 1: QOperator folds that ReLU into linear1's quantized
    output (zero point 0), so linear1's own output is not in the file."""
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(16, 32)
            self.enc = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
            self.head = nn.Linear(32, 5)

        def forward(self, x):
            return self.head(self.enc(self.proj(x)))

    torch.manual_seed(0)
    m = Encoder()
    for n, p in m.named_parameters():
        if p.dim() == 1:
            p.data.uniform_(-0.5, 0.5) if "bias" in n else p.data.uniform_(0.5, 1.5)
    return m.eval()


def seq8x16():
    import torch

    return torch.randn(1, 8, 16)


def gpt_mlp():
    """Two GPT-2-style blocks written out (no transformers): a LayerNorm, a Conv1D (addmm on the input
    viewed 2-D, viewed back) and the tanh GELU (0.5 x (1 + tanh(...)), four Muls), then a Conv1D.  In the
    QOperator format the GELU's last QLinearMul reaches the next QGemm through the Conv1D's Reshape:
    its integers have no reader that names their scale directly."""
    import math

    import torch
    from torch import nn

    class Conv1D(nn.Module):
        def __init__(self, nx: int, nf: int) -> None:
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.randn(nx, nf) * 0.2), nn.Parameter(torch.randn(nf) * 0.1)

        def forward(self, x):
            return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(*x.shape[:-1], -1)

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    class Block(nn.Module):
        def __init__(self, d: int = 32) -> None:
            super().__init__()
            self.ln, self.c_fc, self.act, self.c_proj = nn.LayerNorm(d), Conv1D(d, 4 * d), NewGELU(), Conv1D(4 * d, d)

        def forward(self, x):
            return x + self.c_proj(self.act(self.c_fc(self.ln(x))))

    torch.manual_seed(0)
    return nn.Sequential(Block(), Block()).eval()


def logsig_head():
    """A LayerNorm, then per-label log-probabilities of confident logits (``F.logsigmoid(60 x)``, which the
    TorchScript exporter lowers as ``Log(Sigmoid)``: -inf where the Sigmoid underflows) plus a small learned
    correction ``relu(x) @ W.T`` (the MatMul quantize_static makes int8).  The int8 file is over budget, and no
    keep-in-float32 list can bring it within: the -inf is the lowering's, not the precision's."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Head(nn.Module):
        def __init__(self, d: int = 16) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(d, d) * 1e-3)

        def forward(self, x):
            return F.logsigmoid(x * 60.0) + F.linear(torch.relu(x), self.weight)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm, self.head = nn.LayerNorm(16), Head()

        def forward(self, x):
            return self.head(self.norm(x))

    torch.manual_seed(0)
    return Net().eval()


def rows16():
    import torch

    return torch.randn(8, 16)
