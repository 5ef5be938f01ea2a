"""A real Triton server (PyTriton's tritonserver, its dynamic batcher) on 127.0.0.1: served answers
compared with torch and with the file's local run over HTTP and gRPC, a batch dependence found through
the live batcher, a served file that is not the repository's, and servers that answer wrongly.
``make test-triton`` (marker ``triton``); skipped with the reason when no server can start."""
import json
from pathlib import Path

import pytest

from drifttui.cli import main
from tests.conftest import without_progress
from tests.triton.conftest import NETS
from tests.triton.server import serving

pytestmark = pytest.mark.triton


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("servers")


@pytest.fixture(scope="module")
def bd_server(files, workdir):
    with serving(files["bd"], "bd", workdir) as urls:
        yield urls


@pytest.fixture(scope="module")
def mlp_server(files, workdir):
    with serving(files["mlp"], "m", workdir) as urls:
        yield urls


def _one_error(err: str) -> bool:
    """One line besides the progress printer's (tests/conftest.py: without_progress)."""
    return without_progress(err).count("\n") == 1


def _check(capsys, *args):
    code = main(["check", *args, "--json", "-"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out.strip() else None), captured.err


@pytest.mark.parametrize("proto", [0, 1], ids=["http", "grpc"])
def test_batch_dependence_found_through_the_dynamic_batcher(files, bd_server, capsys, proto):
    code, data, _ = _check(capsys, f"{NETS}:batch_dependent", "--onnx", files["bd"], "--triton-url", bd_server[proto],
                           "--model", "bd", "--samples", "100")
    s = data["served"]
    assert code == 1 and data["verdict"] == "ok"              # the file itself does not drift from torch
    assert s["verdict"] == "differs" and s["reason"] == "batch dependence"
    runs = {r["mode"]: r for r in s["runs"]}
    assert runs["sequential"]["requests"] == 100 and runs["sequential"]["max_abs_vs_local"] <= 1e-5
    assert runs["concurrent"]["max_abs_vs_local"] > 1e-2      # the batcher joined requests
    sweep = data["batch_sweep"]
    first = next(L for L in sweep["layers"] if L["layer"] == sweep["first_layer"])
    assert first["class"] == "BatchCentre"


def test_served_equals_file_over_http(files, mlp_server, capsys):
    code, data, _ = _check(capsys, f"{NETS}:mlp", "--onnx", files["mlp"], "--triton-url", mlp_server[0],
                           "--model", "m", "--samples", "100")
    s = data["served"]
    assert code == 0 and s["verdict"] == "same"
    (out,) = s["outputs"]
    assert out["top1_vs_torch"] == 1.0 and out["batched_top1_vs_torch"] == 1.0 and out["max_abs_vs_local"] < 1e-5


def test_server_serving_another_version_than_the_repository(mlp_server, repo, tmp_path, capsys):
    """The repository's highest version is a retrained model; the server still serves version 1."""
    from tests.triton import nets

    root = Path(repo("params", {1: ("mlp", "model.onnx")}))
    (root / "m" / "2").mkdir()
    nets.export(nets.mlp_retrained(), str(root / "m" / "2" / "model.onnx"))
    capsys.readouterr()                     # the exporter's own lines
    code, data, err = _check(capsys, f"{NETS}:mlp_retrained", "--triton-repo", str(root), "--triton-url",
                             mlp_server[1], "--model", "m", "--samples", "20")
    assert data is not None, err
    s = data["served"]
    assert code == 1 and s["version"] == 2 and s["reason"] == "different file or version"
    assert data["verdict"] == "ok"          # the repository's file agrees with its torch model


def test_unknown_model_and_version(files, mlp_server, capsys):
    code, _, err = _check(capsys, f"{NETS}:mlp", "--onnx", files["mlp"], "--triton-url", mlp_server[0],
                          "--model", "nope")
    assert code == 2 and "does not serve model 'nope'" in err and _one_error(err)
    code, _, err = _check(capsys, f"{NETS}:mlp", "--onnx", files["mlp"], "--triton-url", mlp_server[1],
                          "--model", "m", "--version", "7")
    assert code == 2 and "version 7" in err and _one_error(err)


def test_tls_to_a_plain_server_is_one_line(files, mlp_server, capsys):
    url = mlp_server[0].replace("http://", "https://")
    code, _, err = _check(capsys, f"{NETS}:mlp", "--onnx", files["mlp"], "--triton-url", url, "--model", "m")
    assert code == 2 and "Triton server" in err and _one_error(err)


def test_wrong_shape_answer_exits_3(files, workdir, capsys):
    with serving(files["mlp"], "mshape", workdir, answer="shape") as urls:
        code, _, err = _check(capsys, f"{NETS}:mlp", "--onnx", files["mlp"], "--triton-url", urls[0],
                              "--model", "mshape", "--samples", "3")
    assert code == 3 and "with shape [1, 9]" in err and _one_error(err)


def test_a_cast_at_the_boundary_is_named(files, workdir, capsys):
    """A server that declares and returns int32 where the file computes float32 (a Python backend casting)."""
    with serving(files["mlp"], "mcast", workdir, answer="dtype") as urls:
        code, data, _ = _check(capsys, f"{NETS}:mlp", "--onnx", files["mlp"], "--triton-url", urls[1],
                               "--model", "mcast", "--samples", "3")
    s = data["served"]
    assert code == 1 and s["reason"] == "dtype or reshape at the boundary"
    assert "int32 at the server, float32 in the file" in s["detail"]


def test_requests_are_counted_in_the_progress_and_a_cancel_stops_them(files, mlp_server):
    """The served run's cost in the progress (the TUI's status line: `served 37/80 · 3 s left`), and
    a cancel (the TUI's `x` / `q`) between two requests, not after the last one."""
    from drifttui.core.base.progress import CancelToken
    from drifttui.core.compose import served
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from drifttui.errors import Cancelled

    cfg = Config(model=f"{NETS}:mlp", onnx=files["mlp"], samples=40, triton_url=mlp_server[0], triton_model="m")
    seen = []
    served.run(Pipeline(), cfg, seen.append)
    counted = [p for p in seen if p.stage == "served" and p.total]
    assert counted and {p.total for p in counted} == {80} and counted[-1].done >= 40
    assert [p.done for p in counted] == sorted(p.done for p in counted)
    token, stopped_at = CancelToken(), []

    def cancel_midway(p):
        if p.stage == "served" and p.total and p.done >= 10 and not token.cancelled:
            stopped_at.append(p.done)
            token.cancel()

    with pytest.raises(Cancelled):
        served.run(Pipeline(), cfg, cancel_midway, token)
    assert stopped_at and stopped_at[0] < 40
