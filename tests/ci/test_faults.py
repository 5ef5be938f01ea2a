"""Issue 34, items 3 to 6: every failure said as what it is.

- the machine refusing (no space, a file-size limit, a busy port, a host that does not resolve) is
  exit 2 with the cause and the path, never "an error inside onnx" or "internal failure" (exit 3);
- a folder another repro run filled meanwhile is kept, and said;
- an int4 MatMulNBits whose block_size does not fit its packed weight is exit 2 naming the node;
- ONNX Runtime failing on sample k of N says k (exit 3), not "the inputs do not fit";
- the Python API's misuses are DriftTuiErrors, and a cancelled call leaves no temporary folder;
- an ONNX file in a folder whose name holds a non-UTF-8 byte is checked, its path kept visible.
"""
from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import drifttui
from drifttui.errors import DriftTuiError, InputError, ModelError
from tests.ci.conftest import INPUTS, MODEL, classifier_args, run_cli

ROOT = Path(__file__).resolve().parents[2]


def _drifttui(*args: str, limit: int = 0, timeout: float = 300) -> subprocess.CompletedProcess:
    def cap() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "drifttui", *args], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=cap, cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})


# -- item 3: the machine refusing ---------------------------------------------------------------
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_no_space_raised_inside_onnx_is_said_as_the_machine_refusing():
    from drifttui.cli import unexpected_failure
    from drifttui.errors import environment_failure, failing_dependency

    try:
        onnx.save(helper.make_model(helper.make_graph([], "g", [], [])), "/dev/full")
    except OSError as exc:
        raised = exc
    assert failing_dependency(raised) == "onnx"        # where it was raised: what the old line blamed
    refused = environment_failure(raised)
    assert refused is not None and refused.exit_code == 2
    assert "no space left" in str(refused) and "/dev/full" in str(refused)
    assert "onnx failed" not in unexpected_failure(raised) or refused is not None


@pytest.mark.faults
@pytest.mark.skipif(os.environ.get("DRIFTTUI_FAULTS") != "1", reason="a subprocess under ulimit -f (~50 s on a "
                    "loaded machine): run with `make test-faults`")
def test_a_file_size_limit_while_exporting_is_exit_2_with_the_path():
    run = _drifttui("check", MODEL, "--inputs", INPUTS, "--samples", "2", limit=2000)
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "file-size limit" in run.stderr and "model.onnx" in run.stderr, run.stderr
    assert "inside onnx" not in run.stderr and "internal failure" not in run.stderr


def test_serve_on_a_busy_port_or_an_unresolvable_host_is_exit_2():
    pytest.importorskip("textual_serve")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        run = _drifttui("serve", "--port", str(port), timeout=120)
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "already in use" in run.stderr and str(port) in run.stderr and "internal failure" not in run.stderr
    run = _drifttui("serve", "--host", "no-such-host.invalid", "--port", str(port), timeout=120)
    assert run.returncode == 2 and "does not resolve" in run.stderr, run.stderr
    assert "can be reached from other machines" not in run.stderr     # refused before the warning


def test_a_repro_folder_another_run_filled_meanwhile_is_kept_and_said(variants, tmp_path, monkeypatch):
    from drifttui.core.explain.causes.deliver import repro
    out = tmp_path / "case"
    real = repro.ort_error

    def other_run_first(*a, **k):       # another `repro --out case` finishes while this one writes
        out.mkdir(exist_ok=True)
        (out / "model.onnx").write_bytes(b"the other run's test case")
        return real(*a, **k)

    monkeypatch.setattr(repro, "ort_error", other_run_first)
    run = run_cli(["repro", *classifier_args(variants, "flip")[1:], "--out", str(out)])
    assert run.code == 2, (run.code, run.out, run.err)
    assert "was filled by something else" in run.err and "Directory not empty" not in run.err
    assert (out / "model.onnx").read_bytes() == b"the other run's test case"      # nothing lost
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".drifttui-repro-")]


def _pack4(w: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """MatMulNBits' B (N x blocks x block/2 bytes, low nibble first) and scales of W (K x N), symmetric."""
    K, N = w.shape
    blocks = -(-K // block)
    wt = np.zeros((N, blocks * block), np.float32)
    wt[:, :K] = w.T
    wt = wt.reshape(N, blocks, block)
    scale = np.abs(wt).max(axis=-1) / 7 + 1e-8
    q = (np.clip(np.round(wt / scale[..., None]), -8, 7) + 8).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    return packed, scale.astype(np.float32).reshape(-1)


def test_an_int4_file_whose_block_size_does_not_fit_is_exit_2_naming_the_node(tmp_path):
    torch.manual_seed(0)
    (tmp_path / "lin.py").write_text("import torch\n\ndef build():\n    torch.manual_seed(0)\n"
                                     "    return torch.nn.Linear(32, 8, bias=False).eval()\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import importlib

        lin = importlib.import_module("lin")
        w = lin.build().weight.detach().numpy().T.copy()       # K x N
    finally:
        sys.path.remove(str(tmp_path))
    packed, scales = _pack4(w, 32)

    def save(block_size: int) -> str:
        node = helper.make_node("MatMulNBits", ["x", "B", "scales"], ["y"], name="weird/matmul", domain="com.microsoft",
                                K=32, N=8, bits=4, block_size=block_size)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                                  [numpy_helper.from_array(packed, "B"), numpy_helper.from_array(scales, "scales")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
        path = tmp_path / f"int4-{block_size}.onnx"
        onnx.save(model, str(path))
        return str(path)

    good = run_cli(["check", f"{tmp_path / 'lin.py'}:build", "--onnx", save(32), "--inputs", "shape:1x32",
                    "--samples", "2"])
    assert good.code in (0, 1), good.err
    for bad in (24,):
        run = run_cli(["check", f"{tmp_path / 'lin.py'}:build", "--onnx", save(bad), "--inputs", "shape:1x32",
                       "--samples", "2"])
        assert run.code in (2, 3), (bad, run.code, run.err)
        assert "internal failure" not in run.err and "reshape" not in run.err, run.err
        if run.code == 2:
            assert f"block_size={bad}" in run.err and "weird/matmul" in run.err, run.err


# -- item 4: the failing sample named -----------------------------------------------------------
class _Pick(torch.nn.Module):
    """Picks a column by the value of its first input: out of range on a sample that asks for it."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        idx = x[0, :1].round().long()
        return self.fc(torch.index_select(x, 1, idx).expand(-1, 4))


def _picks(bad: int):
    def inputs(i):
        x = torch.zeros(1, 4)
        x[0, 1:] = torch.randn(3)
        if i == bad:
            x[0, 0] = 100.0
        return x
    return inputs


def test_onnx_runtime_failing_on_sample_7_is_exit_3_naming_it():
    with pytest.raises(ModelError) as err:
        drifttui.check(_Pick().eval(), inputs=_picks(7), samples=10, exporter="torchscript")
    text = str(err.value)
    assert err.value.exit_code == 3 and "ONNX Runtime failed on sample 7 of 10" in text, text
    assert "do not fit" not in text


def test_an_inputs_callable_or_iterable_failing_names_the_sample():
    def inputs(i):
        if i == 5:
            raise RuntimeError("the loader broke")
        return torch.randn(1, 4)

    with pytest.raises(InputError, match=r"the loader broke on sample 5"):
        drifttui.check(torch.nn.Linear(4, 4), inputs=inputs, samples=8)

    def batches():
        yield torch.randn(1, 4)
        yield torch.randn(1, 4)
        raise OSError("the dataset file went away")

    with pytest.raises(InputError, match=r"went away on sample 2"):
        drifttui.check(torch.nn.Linear(4, 4), inputs=batches(), samples=8)


# -- item 5: the Python API's contract ----------------------------------------------------------
def test_python_api_misuses_are_drifttui_errors():
    with pytest.raises(InputError, match="is the class Linear, not a model"):
        drifttui.check(torch.nn.Linear, inputs=torch.randn(1, 4))
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(InputError, match="min_top1"):
            drifttui.assert_no_drift(torch.nn.Linear(4, 4), inputs=torch.randn(1, 4), min_top1=bad)
    with pytest.raises(InputError, match="--samples"):
        drifttui.check(torch.nn.Linear(4, 4), inputs=lambda i: torch.randn(1, 4), samples="3")
    with pytest.raises(InputError, match="--atol"):
        drifttui.check(torch.nn.Linear(4, 4), inputs=torch.randn(1, 4), atol=None)


def test_a_cancelled_check_leaves_no_temporary_folder(tmp_path, monkeypatch):
    from drifttui.api import CancelToken

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    drifttui.check(torch.nn.Linear(4, 4), inputs=lambda i: torch.randn(1, 4), samples=2)   # an earlier check
    cancel = CancelToken()

    def progress(p):
        if p.stage == "samples":
            cancel.cancel()

    with pytest.raises(Exception) as err:
        drifttui.check(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()),
                       inputs=lambda i: torch.randn(1, 4), samples=50, progress=progress, cancel=cancel)
    assert type(err.value).__name__ == "Cancelled"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- item 6: a folder whose name holds a non-UTF-8 byte -----------------------------------------
@pytest.mark.skipif(sys.platform != "linux", reason="POSIX byte paths")
def test_an_onnx_file_in_a_non_utf8_folder_is_checked_and_its_path_kept(variants, tmp_path):
    folder = os.fsencode(str(tmp_path)) + b"/caf\xe9-\xff"
    os.makedirs(folder)
    onnx_path = os.fsdecode(folder + b"/clean.onnx")
    shutil.copy(variants["clean"], onnx_path)
    for data in Path(variants["clean"]).parent.glob(Path(variants["clean"]).name + ".data"):
        shutil.copy(data, os.fsdecode(folder + b"/" + os.fsencode(data.name)))
    report, md, xml = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.xml"
    run = run_cli(["check", MODEL, "--inputs", INPUTS, "--onnx", onnx_path, "--samples", "2", "--json", str(report),
                   "--markdown", str(md), "--junit", str(xml)])
    assert run.code == 0, (run.code, run.err)
    text = report.read_text()
    assert json.loads(text)["config"]["onnx"] == onnx_path            # the path, escaped in the JSON text
    assert "\\udce9" in text and "\\udcff" in text
    for other in (md, xml):                                           # the summaries keep it visible too
        assert "caf\\udce9-\\udcff" in other.read_text(), other
