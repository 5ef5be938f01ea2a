"""A lowering that drops torch's NaN (torchlib's real ``angle``: finite where torch's ``angle(NaN)`` is NaN):
told in that direction, not as "returns inf or NaN where torch's value is finite" (the words of the other
direction, which a session-28 held-out run printed), verified by carrying the input's NaN through
(``nan_pass``, onnx/edit/lowerings/singular.py), and repaired: the copy passes ``check``.  No catalogue entry knows
``angle``: the session-28 held-out run found no patch among 6."""
from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).parent
SPEC = str(HERE / "nan_direction_forms.py")


def test_a_lowering_that_drops_torchs_nan_is_told_so_verified_and_repaired(tmp_path):
    import torch

    sys.path.insert(0, str(HERE))
    try:
        import nan_direction_forms as F
    finally:
        sys.path.remove(str(HERE))
    onnx_path = tmp_path / "angle.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(F.angle_shallow(), (F.inputs(),), str(onnx_path), dynamo=True)
    out = subprocess.run([sys.executable, "-m", "drifttui", "diagnose", f"{SPEC}:angle_shallow",
                          "--inputs", f"{SPEC}:inputs", "--onnx", str(onnx_path), "--exporter", "dynamo",
                          "--samples", "3", "--json", str(tmp_path / "r.json")], capture_output=True, text=True,
                         timeout=600)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["drift_origin"]["module"] == "op", (out.returncode, out.stderr[-2000:])
    told = [f["message"] for f in report["findings"] if "aten.angle" in f["message"]]
    assert told, [f["message"] for f in report["findings"]]
    assert not any("inf or NaN where torch's value is finite" in line for line in told), told
    cause = report["findings"][0]
    assert cause["check"] == "lowering" and cause["verified"] is True, cause["message"]
    assert "carries the NaN through" in cause["message"]
    fixed = tmp_path / "fixed.onnx"
    cli = [sys.executable, "-m", "drifttui"]
    common = [f"{SPEC}:angle_shallow", "--inputs", f"{SPEC}:inputs", "--exporter", "dynamo", "--samples", "3"]
    rep = subprocess.run(cli + ["repair", *common, "--onnx", str(onnx_path), "--out", str(fixed)],
                         capture_output=True, text=True, timeout=600)
    assert rep.returncode == 0 and fixed.exists(), (rep.stdout[-1500:], rep.stderr[-1500:])
    chk = subprocess.run(cli + ["check", *common, "--onnx", str(fixed)], capture_output=True, text=True, timeout=600)
    assert chk.returncode == 0, (chk.stdout[-1500:], chk.stderr[-1500:])


def test_the_wrong_nodes_words_follow_the_direction_measured():
    """describe() (the message when no patch verifies) says which side is NaN: the file's, torch's, or both."""
    from drifttui.core.explain.causes.locate.fx_localise import FxLocalisation, FxNode
    from drifttui.core.explain.causes.locate.fx_words import describe

    def told(**flags):
        node = FxNode("angle", "aten.angle.default", ["node_angle"], ["Where"], own_abs=1.0, own_rel=float("inf"),
                      fails=True, nonfinite=True, **flags)
        return describe(FxLocalisation([node], {}, wrong=node), "op")

    drops = told(drops_nonfinite=True)
    assert "finite values where torch's value is NaN or inf" in drops
    assert "inf or NaN where torch's value is finite" not in drops
    makes = told(makes_nonfinite=True)
    assert "inf or NaN where torch's value is finite" in makes and "carries it through" not in makes
    both = told(drops_nonfinite=True, makes_nonfinite=True)
    assert "carries it through" in both and "inf or NaN where torch's value is finite" in both


def test_a_long_lowering_is_said_by_its_count_first_and_last_node():
    """A wrong node lowered to a dozen ONNX nodes (the dynamo exporter's scaled_dot_product_attention) is said as
    "12 ONNX nodes from <first> to <last>": the words after it (the call, the error) stay readable; a short one keeps
    every node."""
    from drifttui.core.explain.causes.locate.fx_localise import FxLocalisation, FxNode
    from drifttui.core.explain.causes.locate.fx_words import describe

    def told(n: int) -> str:
        node = FxNode("sdpa", "aten.scaled_dot_product_attention.default", [f"node_{k}" for k in range(n)],
                      ["Reshape"] + ["Mul"] * (n - 2) + ["MatMul"], own_abs=2.98, own_rel=0.5, fails=True)
        return describe(FxLocalisation([node], {}, wrong=node), "body")

    long = told(12)
    assert long.startswith("12 ONNX nodes from Reshape node_0 to MatMul node_11 (torch's "), long
    assert "node_5" not in long and "its own error is 2.98" in long
    assert told(3).startswith("Reshape node_0, Mul node_1, MatMul node_2 (torch's ")
