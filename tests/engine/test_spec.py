import pytest

from drifttui.core.model.spec import parse_input_spec, parse_model_spec
from drifttui.errors import InputError


def test_model_specs():
    assert parse_model_spec("models/net.py:build").callable.is_file
    s = parse_model_spec("pkg.models:build")
    assert s.kind == "callable" and not s.callable.is_file and s.callable.attr == "build"
    assert parse_model_spec("m.pt").kind == "torchscript"
    assert parse_model_spec("m.pt2").kind == "exported_program"
    with pytest.raises(InputError, match="--onnx"):
        parse_model_spec("m.onnx")
    with pytest.raises(InputError):
        parse_model_spec("pkg.models:not-a-name")


def test_input_specs():
    s = parse_input_spec("shape:1x3x224x224;int64:1x16")
    assert [(x.dtype, x.shape) for x in s.shapes] == [("float32", (1, 3, 224, 224)), ("int64", (1, 16))]
    assert parse_input_spec("x.npz").kind == "file"
    assert parse_input_spec("data.py:make").kind == "callable"
    assert parse_input_spec(None).kind == "default"
    with pytest.raises(InputError, match="shape"):
        parse_input_spec("shape:1xAx3")
    with pytest.raises(InputError, match="dtype"):
        parse_input_spec("shape:complex9:1x2")


def test_callable_inputs_are_seeded_per_sample(tmp_path):
    from drifttui.core.model.inputs import build_source

    f = tmp_path / "inp.py"
    f.write_text("import torch\ndef make():\n    return torch.randn(2, 3)\n")
    src = build_source(parse_input_spec(f"{f}:make"), seed=5, zero=False, graph_inputs=None)
    a0, a0b, a1 = src.sample(0)[0][0], src.sample(0)[0][0], src.sample(1)[0][0]
    assert (a0 == a0b).all() and not (a0 == a1).all()


def test_default_inputs_from_graph_with_symbolic_dims():
    from drifttui.core.model.inputs import build_source

    src = build_source(parse_input_spec(None), seed=0, zero=False,
                       graph_inputs=[("x", ["batch", 3, 8], "float32"), ("ids", [1, "seq"], "int64")])
    (x, ids), _ = src.sample(0)
    assert tuple(x.shape) == (1, 3, 8) and tuple(ids.shape) == (1, 1)
    assert str(ids.dtype) == "torch.int64"
