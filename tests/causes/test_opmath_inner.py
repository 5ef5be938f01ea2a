"""The opmath rewrite at the calls inside a verified origin (``propose/numerics/opmath_inner.py``).

A TorchScript file scopes a Linear called under ``torch.autocast`` apart (``/body/lin/Cast``, ``/body/lin/Gemm``):
ONNX Runtime's CPU drops the float16 rounding of the Linear's input (its inserted Cast pair), within the Linear's
own float16 budget.  The origin's patch covers the origin's own nodes; the same per-op rewrite at the inner call's
low-precision nodes makes the file's Linear compute what torch's does, bit for bit (forms41g's ``sq_dist``, whose
repaired copy drifted on a sample the case did not hold)."""
from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

HERE = __file__


class _Body(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.float16):
            y = self.lin(x) + 4.0
            d2 = (y * y).sum(-1, keepdim=True) - 2.0 * (y @ y.T)
        return d2.float()


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _Body()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def tiny() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 16)


def _lin_out(path: str, x: torch.Tensor, value: str) -> np.ndarray:
    import onnx

    m = onnx.load(path)
    m.graph.output.append(onnx.helper.make_tensor_value_info(value, onnx.TensorProto.FLOAT16, None))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run([value], {s.get_inputs()[0].name: x.numpy()})[0]


def test_the_per_op_rewrite_reaches_the_linear_inside_the_origin(tmp_path):
    import onnx

    from drifttui.core.explain.causes.propose.numerics.opmath_inner import inner_opmath_patches
    from drifttui.core.onnx.edit.patches import Patch, apply
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    path = tmp_path / "tiny.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(tiny(), (rows_inputs(),), str(path), dynamo=False)
    pr = prepare(Config(model=f"{HERE}:tiny", inputs=f"{HERE}:rows_inputs", onnx=str(path), samples=1))
    body = next(c.index for c in pr.calls if c.module == "body")
    origin = Patch({"op": "rewrite", "rewrite": "opmath_float32", "form": "per_op", "node": "/body/Add",
                    "nodes": ["/body/Add"]}, "dtype", "", "")
    inner = inner_opmath_patches(pr, body, origin)
    assert [p.module for p in inner] == ["body.lin"]
    assert set(inner[0].nodes) == {"/body/lin/Cast", "/body/lin/Gemm"}
    value = "/body/lin/Gemm_output_0"
    torch.manual_seed(3)
    x = rows_inputs()
    model = tiny()
    with torch.no_grad():
        h = model.stem(x)
        with torch.autocast("cpu", dtype=torch.float16):
            want = model.body.lin(h).numpy()
    before = int((_lin_out(str(path), x, value) != want).sum())
    fixed = tmp_path / "fixed.onnx"
    onnx.save(apply(onnx.load(str(path)), inner[0]), str(fixed))
    after = int((_lin_out(str(fixed), x, value) != want).sum())
    assert before > 0, "ONNX Runtime drops the rounding of the Linear's input"
    assert after == 0, after


class _Attn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(16, 16) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.float16):
            s = self.q(x) @ self.k(x).T
            v = self.v(x)
        return torch.softmax(s.float(), -1) @ v.float()


class _TinyAttn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _Attn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def tiny_attn() -> nn.Module:
    torch.manual_seed(0)
    return _TinyAttn().eval()


def test_three_projections_sharing_the_autocast_cast_are_one_valid_rewrite(tmp_path):
    """The TorchScript trace casts ``x`` once (in ``q``'s scope) for the three projections: a rewrite per call cast it
    to float32 three times under one name (a file ONNX refuses, not in SSA form); one rewrite reads it once."""
    import onnx

    from drifttui.core.explain.causes.propose.numerics.opmath_inner import inner_opmath_patches
    from drifttui.core.onnx.edit.patches import Patch, apply
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    path = tmp_path / "attn.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(tiny_attn(), (rows_inputs(),), str(path), dynamo=False)
    pr = prepare(Config(model=f"{HERE}:tiny_attn", inputs=f"{HERE}:rows_inputs", onnx=str(path), samples=1))
    body = next(c.index for c in pr.calls if c.module == "body")
    origin = Patch({"op": "rewrite", "rewrite": "opmath_float32", "form": "per_op", "node": "/body/MatMul",
                    "nodes": ["/body/MatMul"]}, "dtype", "", "")
    fixed = onnx.load(str(path))
    for p in inner_opmath_patches(pr, body, origin):
        fixed = apply(fixed, p)
    onnx.checker.check_model(fixed)
    torch.manual_seed(3)
    x = rows_inputs()
    s = ort.InferenceSession(fixed.SerializeToString(), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        want = tiny_attn()(x).numpy()
    assert np.abs(s.run(None, {s.get_inputs()[0].name: x.numpy()})[0] - want).max() < 1e-3
