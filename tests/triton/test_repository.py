"""A Triton model repository as input: config.pbtxt read with Triton's own protobuf schema, the served
file chosen as Triton chooses it, the onnxruntime backend's settings translated (src/onnxruntime.cc)
and applied to real ONNX Runtime sessions, the boundary's inputs, and one-line refusals."""
import json

import onnxruntime as ort
import pytest

from drifttui.cli import main
from drifttui.core.runtime import sessions
from drifttui.core.runtime.triton import boundary, repository, settings
from drifttui.core.runtime.triton.config import read_config
from drifttui.errors import InputError
from tests.triton.conftest import CONFIGS, NETS

LEVEL = ort.GraphOptimizationLevel


@pytest.mark.parametrize("config,level,ort_level", [
    ("levels_basic", "basic", LEVEL.ORT_ENABLE_BASIC),          # -1
    ("levels_extended", "extended", LEVEL.ORT_ENABLE_EXTENDED),  # 1
    ("levels_off", "disable", LEVEL.ORT_DISABLE_ALL),            # 2
    ("params", "all", LEVEL.ORT_ENABLE_ALL),                     # absent
])
def test_graph_level_is_triton_scale_not_ort_enum(config, level, ort_level):
    tr = settings.translate(read_config(CONFIGS / f"{config}.pbtxt"))
    assert tr.settings.opt_level == level
    so = sessions.session_options(tr.settings.opt_level, False, settings=tr.settings.entries())
    assert so.graph_optimization_level == ort_level
    assert any(f.startswith("optimization.graph.level") for f in tr.fields) == (config != "params")


def test_level_zero_or_unknown_leaves_everything_on():
    from drifttui.core.runtime.triton.config import parse_text

    for raw in (0, 3, -2):
        cfg = parse_text(f'name: "m" optimization {{ graph {{ level: {raw} }} }}', "inline")
        assert settings.translate(cfg).settings.opt_level == "all"


def test_parameters_reach_the_onnx_runtime_session():
    tr = settings.translate(read_config(CONFIGS / "params.pbtxt"))
    so = sessions.session_options(tr.settings.opt_level, False, settings=tr.settings.entries())
    assert (so.intra_op_num_threads, so.inter_op_num_threads) == (1, 2)
    assert so.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert so.enable_cpu_mem_arena is False and so.enable_mem_pattern is False
    named = " ".join(tr.fields)
    for key in ("intra_op_thread_count", "inter_op_thread_count", "execution_mode", "enable_mem_arena",
                "enable_mem_pattern"):
        assert key in named


def test_what_this_machine_cannot_reproduce_is_said():
    tr = settings.translate(read_config(CONFIGS / "accelerators.pbtxt"))
    said = " ".join(tr.unreproducible)
    assert "TensorRT" in said and "FP16" in said and "openvino" in said
    gpu = settings.translate(read_config(CONFIGS / "kind_gpu.pbtxt"))
    assert any("KIND_GPU" in u and "CUDA" in u for u in gpu.unreproducible)
    assert settings.translate(read_config(CONFIGS / "params.pbtxt")).unreproducible == []


def test_bad_parameter_is_refused_like_triton_does():
    with pytest.raises(InputError, match="execution_mode"):
        settings.translate(read_config(CONFIGS / "bad_param.pbtxt"))


def test_a_config_that_does_not_parse_names_its_line(tmp_path):
    with pytest.raises(InputError, match=r"line 5, column \d+") as err:
        read_config(CONFIGS / "broken.pbtxt")
    assert "TYPE_FP33" in str(err.value) and "\n" not in str(err.value)


def test_served_version_follows_version_policy(repo):
    versions = {v: ("mlp", "model.onnx") for v in (1, 2, 3)}
    root = repo("", versions)
    (__import__("pathlib").Path(root) / "m" / "04").mkdir()          # starts with 0: ignored by Triton
    assert repository.resolve(root, "m").version == 3                 # no config: latest 1
    root = repo("versions_specific", versions)
    sf = repository.resolve(root, "m")
    assert (sf.version, sf.versions) == (3, (1, 3))
    assert repository.resolve(root, "m", 1).version == 1
    with pytest.raises(InputError, match=r"does not serve version 2.*\[1, 3\]"):
        repository.resolve(root, "m", 2)
    root = repo("versions_latest2", versions)
    assert repository.resolve(root, "m").versions == (2, 3)


def test_default_model_filename_and_model_directory(repo, tmp_path):
    root = repo("filename_fp16", {1: ("mlp_fp16", "model_fp16.onnx")})
    assert repository.resolve(root, "m").path.name == "model_fp16.onnx"
    root2 = tmp_path / "r2"
    (root2 / "m" / "1" / "model.onnx").mkdir(parents=True)
    import shutil

    shutil.copy(repository.resolve(root, "m").path, root2 / "m" / "1" / "model.onnx" / "model.onnx")
    assert repository.resolve(str(root2), "m").path.parts[-2:] == ("model.onnx", "model.onnx")


def test_unknown_model_and_other_backends_are_refused(repo):
    root = repo("params")
    with pytest.raises(InputError, match="no model 'other'.*m"):
        repository.resolve(root, "other")
    root = repo("python_backend")
    with pytest.raises(InputError, match="'python', not ONNX Runtime"):
        repository.resolve(root, "m")


def test_reshape_boundary_shapes():
    b = boundary.boundary(read_config(CONFIGS / "reshape.pbtxt"))
    t = b.inputs[0]
    assert (t.dims, t.model_dims) == ((4, 4), (16,))
    assert b.wire_shape(t, (1, 16)) == (1, 4, 4)
    assert boundary.input_spec(b, [("x", ["batch", 16], "float32")]) == "shape:1x16"
    nb = boundary.boundary(read_config(CONFIGS / "no_batch.pbtxt"))
    assert boundary.input_spec(nb, [("x", ["batch", 16], "float32")]) == "shape:1x16"


@pytest.mark.parametrize("config,words", [
    ("wrong_name", "input 'pixels' is not an input of the ONNX file"),
    ("wrong_type", "input 'x' is int64, the ONNX file's is float32"),
    ("wrong_dims", "input 'x' has dims [-1, 15]"),
    ("broken", "does not parse at line 5"),
    ("bad_param", "execution_mode is 2"),
])
def test_bad_repositories_end_in_one_line_exit_2(repo, capsys, config, words):
    root = repo(config)
    code = main(["check", f"{NETS}:mlp", "--triton-repo", root, "--model", "m", "--samples", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert words in err and err.count("\n") == 1


def test_repository_run_end_to_end_fp16_boundary(repo, capsys):
    """The float16 file behind TYPE_FP16 I/O: the repository picks it by default_model_filename, the
    inputs come from the config, torch is fed the float16-rounded samples in float32."""
    root = repo("filename_fp16", {1: ("mlp_fp16", "model_fp16.onnx")})
    code = main(["check", f"{NETS}:mlp", "--triton-repo", root, "--model", "m", "--samples", "3", "--json", "-"])
    data = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    served = data["served"]
    assert served["file"].endswith("1/model_fp16.onnx") and served["version"] == 1
    assert any("TYPE_FP16" in f for f in served["config_fields"])
    assert data["config"]["inputs"] == "shape:1x16" and data["config"]["onnx"] == served["file"]
    assert any("rounded to float16" in n for n in data["notes"])


def test_repository_settings_reach_the_run_and_the_report(repo, capsys):
    root = repo("levels_basic")
    code = main(["check", f"{NETS}:mlp", "--triton-repo", root, "--model", "m", "--samples", "3"])
    out = capsys.readouterr().out
    assert code == 0
    assert "served: m version 1" in out and "optimization.graph.level -1 -> ONNX Runtime BASIC" in out
    assert "(outputs: basic)" in out
