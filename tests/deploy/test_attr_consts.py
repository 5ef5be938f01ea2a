"""An activation's constants against the module's own (prepare/attr_consts.py, core/onnx/pattern.py; issue 33):
a GELU exported as elementwise nodes keeps its constants as inputs (the tanh form's 0.044715, the erf form's
sqrt 2), which nothing declares by name.  Changed AFTER a float16 or int8 conversion, the layer moves by
less than its precision budget in the drift matrix's GPT-2 / BERT / ViT / ConvNeXt files.  The module
exported alone is the same pattern of nodes; the file's constant at each place is compared with the
reference's, its float16 / int8 rounding not counted.  A small model built here, both a float16 (dynamo) and
a QDQ (TorchScript) file; the real architectures are test_drift_matrix.py's (`make test-deploy`)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from torch import nn

from drifttui.core.onnx.pattern import Const, Pair
from drifttui.core.prepare.attr_consts import differs
from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS, DRIFT
from tests.deploy import attr_plant as A
from tests.deploy.conftest import needs

HERE = Path(__file__).resolve()


class TanhGELU(nn.Module):
    """transformers' NewGELUActivation written out: another library's class, no attribute to compare."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GeluMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(16, 64), TanhGELU(), nn.Linear(64, 64)
        self.act2, self.fc3 = nn.GELU(), nn.Linear(64, 8)

    def forward(self, x):
        return self.fc3(self.act2(self.fc2(self.act(self.fc1(x)))))


def gelu_mlp():
    torch.manual_seed(0)
    return GeluMLP().eval()


def tokens():
    return torch.randn(1, 8, 16)


def _export(exporter: str, folder: Path) -> Path:
    from drifttui.core.model.export import export_model

    path = export_model(gelu_mlp(), (tokens(),), {}, exporter, folder, name=f"mlp-{exporter}.onnx")
    out = folder / f"mlp-{exporter}-embedded.onnx"
    onnx.save(onnx.load(str(path)), str(out))
    return out


def _check(path: Path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=f"{HERE}:gelu_mlp", inputs=f"{HERE}:tokens", onnx=str(path), samples=2)).result


def _evidence(result) -> dict[str, str]:
    return {L.module: L.note for L in result.layers if ATTRIBUTE_NOT_THE_MODELS in L.note}


def _named(clean_path: Path, bad_path: Path, module: str, found: str, want: str) -> None:
    clean = _check(clean_path)
    assert not _evidence(clean), _evidence(clean)     # the converter's rounding of 0.044715 is not a drift
    bad = _check(bad_path)
    notes = _evidence(bad)
    assert list(notes) == [module], notes
    assert f"has constant input 1 {found}" in notes[module] and f"declares {want} there" in notes[module], notes
    assert bad.verdict == DRIFT and bad.drift_origin.module == module, bad.drift_origin
    assert bad.precision.cause == "genuine drift"


def _scaled(path: Path, k: int, factor: float, dst: Path) -> Path:
    """The ``k``-th GELU constant (attr_plant's sites) x ``factor``, stored in its own dtype."""
    model = onnx.load(str(path))
    g = A._Graph(model)
    node, _, pos, v = A._gelu_sites(g)[k]
    dtype = onnx.numpy_helper.to_array(g.tensor(node.input[pos])).dtype
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(v * factor, dtype=dtype), "scaled_constant"))
    node.input[pos] = "scaled_constant"
    onnx.save(model, str(dst))
    return dst


def test_a_tanh_gelu_constant_changed_in_a_float16_file_is_named(tmp_path):
    """0.044715 x1.03 moves act by less than its float16 budget: the file was within budget (x1.1 was
    caught by the numbers); 0.044715 rounded to float16 by the converter is clean."""
    from tests.deploy.precision_models import fp16_ort

    half = fp16_ort(_export("dynamo", tmp_path), tmp_path / "half.onnx")
    kept = [t for t in onnx.load(str(half)).graph.initializer if t.data_type == onnx.TensorProto.FLOAT16 and
            not t.dims and abs(float(onnx.numpy_helper.to_array(t)) - 0.044715) < 1e-4]
    assert kept and float(onnx.numpy_helper.to_array(kept[0])) != np.float32(0.044715)   # rounded to float16
    bad = _scaled(half, 0, 1.03, tmp_path / "bad.onnx")            # act's 0.044715, in float16
    _named(half, bad, "act", "0.046051 (float16)", "0.044715")


def test_an_erf_gelu_constant_changed_in_a_qdq_file_is_named_and_repaired(tmp_path, capsys):
    needs("onnxruntime.quantization")
    from tests.deploy.precision_models import int8_qdq

    raw = _export("torchscript", tmp_path)
    name = onnx.load(str(raw)).graph.input[0].name

    def feeds(i):
        torch.manual_seed(i)
        return {name: tokens().numpy()}
    qdq = int8_qdq(raw, tmp_path / "qdq.onnx", feeds, n=4)
    bad = A.alpha(qdq, -1, tmp_path / "bad.onnx")            # act2's sqrt 2 -> x1.25
    _named(qdq, bad, "act2", "1.76777 (float32)", "1.41421")
    from drifttui.cli import main                            # repair puts the module's constant back

    out = tmp_path / "fixed.onnx"
    main(["repair", f"{HERE}:gelu_mlp", "--onnx", str(bad), "--inputs", f"{HERE}:tokens", "--samples", "2",
          "--out", str(out)])
    said = capsys.readouterr().out
    assert out.exists() and "of node /act2/Div (act2) set back to 1.414" in said, said
    assert not _evidence(_check(out))


@pytest.mark.parametrize("found,want,fmt,step,same", [
    (np.float16(0.044715), 0.044715, "float16", 0.0, True),       # the converter's rounding
    (np.float16(0.1), 0.044715, "float16", 0.0, False),
    (np.float16(1e4), -3.4028234663852886e38, "float16", 0.0, False),   # clamped, but the sign flipped
    (np.float16(-1e4), -3.4028234663852886e38, "float16", 0.0, True),   # onnxconverter-common's clamp
    (0.5 - 0.0009, 0.5, "int8", 0.0019607844 / 2, True),          # within half a quantization step
    (0.5 - 0.0019607844, 0.5, "int8", 0.0019607844 / 2, False),   # a whole step off
    (0.5 * 1.01, 0.5, "int8", 0.0019607844 / 2, False),
    (np.float32(1.4142135), math.sqrt(2.0), "float32", 0.0, True),
    (np.float32(1.4142135 * 1.25), math.sqrt(2.0), "float32", 0.0, False),
])
def test_a_rounding_is_not_a_difference(found, want, fmt, step, same):
    pair = Pair(0, "input 1", Const(np.array([float(found)]), fmt, step), Const(np.array([want]), "float32"))
    assert (differs(pair) is None) == same, differs(pair)
