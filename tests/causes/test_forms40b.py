"""Upstream drift forms found for issue 30 point 8 in session 29, held-out batch B (tests/causes/forms40b.py: a
``batch_norm(training=True)`` in an eval model, attention over an empty memory or a blind query, in a feature MLP, a
conv net, a cross-attention block, a self-attention block and a two-layer ``nn.TransformerDecoder``); none of them in
forms20/30/32-39, forms_special / forms_nan / forms_dof, upstream.py, real.py, benchmarks/causes_forms.py or the
catalogue; the deep ones inside forms30's 16-call stem or a 12-call conv stem, exported by the real exporters and
run in real ONNX Runtime: the origin, the cause's class by mechanism, ``verified``, and ``repair``'s file passes
``check``; clean controls.

First run, before any engine change (``drifttui diagnose``, ``repair``, ``check`` on the repaired file, the engine as
it stood at session 29's start), then after session 29's two changes:

| pair | first run: origin / class by mechanism / verified / repair passes check | after |
|---|---|---|
| batch_stats dynamo (deep) | right / **no** (``normalization``: "BatchNormalization ... computes something else than torch", the TorchScript re-export grafted) / yes / ok | ``set_attribute training_mode=1``, verified, ok |
| tta_cnn dynamo (deep) | right / **no** (the same words) / yes / ok | ``set_attribute training_mode=1``, verified, ok |
| empty_memory torchscript (deep) | right / yes (``lowering``, the Softmax's NaN guarded) / yes / ok | unchanged |
| empty_memory dynamo (deep) | right / **no** (``lowering`` of ``aten.view``: a Reshape named wrong) / yes (core ATen re-export) / ok | the Softmax's NaN guarded, verified, ok |
| blind_query torchscript / dynamo | right / yes / yes / ok | unchanged |
| decoder_empty_memory torchscript (deep) | right / yes / yes / **no** (layer 0's Softmax guarded, ``check`` drifts at layer 1) | the guard at each layer's Softmax, ok |
| decoder_empty_memory dynamo (deep) | right / **no** (``aten.view``) / yes (a re-export, grafted in each layer) / ok | the Softmax guarded in each layer, ok |

First run: origin 8/8, class by mechanism 4/8, verified 8/8, repair passes check 7/8; clean controls 4/4.

What moved them: a verified re-export's counterpart node diffed attribute by attribute
(``propose/reexport/witness_attributes.py``: the file's ``BatchNormalization`` leaves out the ``training_mode=1`` the
TorchScript re-export sets, so ``repair`` sets one attribute instead of grafting); an FX value paired with a
rearranging node (Reshape, Transpose, ...) that holds other elements than torch's value of the node's input is
another call's (``locate/fx_localise._paired``): the Reshape is not judged by it, the Softmax is; a verified graph
edit moved to the same node of each other call of the origin's class (``propose/siblings.sibling_patches``).
"""
from __future__ import annotations

import pytest
from onnx import helper, TensorProto

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms,
                                     params)

INPUTS = {"empty_memory": "seq_inputs", "partial_memory": "seq_inputs", "blind_query": "seq_inputs",
          "open_query": "seq_inputs", "decoder_empty_memory": "seq_inputs", "decoder_memory": "seq_inputs",
          "tta_cnn": "image_inputs", "tracked_instance": "image_inputs"}
_STATS = ("normalization", "set_attribute", {"name": "training_mode", "value": 1}, "training_mode=1")
_EMPTY = ("lowering", "rewrite", {"rewrite": "nonfinite_guard"}, "makes NaN or inf")
# (model, exporter) -> (class, patch op, what the patch changed, words of the message), origin
VERIFIED = {
    ("batch_stats", "dynamo"): (_STATS, "body"), ("tta_cnn", "dynamo"): (_STATS, "body"),
    ("empty_memory", "torchscript"): (_EMPTY, "body.attn"), ("empty_memory", "dynamo"): (_EMPTY, "body.attn"),
    ("blind_query", "torchscript"): (_EMPTY, "body.attn"), ("blind_query", "dynamo"): (_EMPTY, "body.attn"),
    ("decoder_empty_memory", "torchscript"): (_EMPTY, "body.decoder.layers.0.multihead_attn"),
    ("decoder_empty_memory", "dynamo"): (_EMPTY, "body.decoder.layers.0.multihead_attn"),
}
CLEAN = [("running_stats", "dynamo"), ("tracked_instance", "dynamo"), ("partial_memory", "torchscript"),
         ("tta_cnn", "torchscript")]
FAST = {("batch_stats", "dynamo"), ("empty_memory", "dynamo")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms40b", inputs=INPUTS)


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_a_form_is_explained_by_mechanism_verified_and_repaired(explained, form):
    expected, origin = VERIFIED[form]
    assert_verified_and_repaired(explained, form, expected, origin)


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    deep = deep_forms(explained, list(VERIFIED))
    assert len(deep) * 2 >= len(VERIFIED), deep


def _bn_case(training_mode=None, outputs=1, eps=1e-5):
    """A one-node graph: a BatchNormalization over a [4, 3] input (``training_mode`` set when given)."""
    from onnx import numpy_helper
    import numpy as np

    inits = [numpy_helper.from_array(np.ones(3, np.float32), n) for n in ("w", "b", "v")]
    inits.append(numpy_helper.from_array(np.zeros(3, np.float32), "m"))
    outs = ["y"] + [f"y{k}" for k in range(1, outputs)]
    attrs = {"epsilon": eps, **({"training_mode": training_mode} if training_mode is not None else {})}
    node = helper.make_node("BatchNormalization", ["x", "w", "b", "m", "v"], outs, name="bn", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_witness_attribute_is_proposed_with_the_outputs_it_needs_and_runs():
    """The re-export's BatchNormalization sets training_mode=1 (three outputs): the file's node gets it (its own
    epsilon, an attribute it writes, is left to the checks that know the module's), and the patched graph runs in ONNX Runtime and normalises by the batch (each column's mean is the bias, 1)."""
    import numpy as np

    from drifttui.core.explain.causes.locate.evaluate import run_ort
    from drifttui.core.explain.causes.propose.reexport.witness_attributes import witness_attribute_patches
    from drifttui.core.onnx.edit.patches import apply

    class _Case:
        model, module = _bn_case(), "body"

    got = list(witness_attribute_patches(_Case, "bn", _bn_case(1, 3, eps=1e-3), "torchscript"))
    assert [p.spec for p in got] == [{"op": "set_attribute", "node": "bn", "name": "training_mode", "value": 1,
                                      "outputs": 3}]
    assert got[0].check == "normalization" and "training_mode=0" in got[0].why
    x = (np.arange(12, dtype=np.float32).reshape(4, 3) + 5.0)
    y = run_ort(apply(_Case.model, got[0]), {"x": x}, ["y"])["y"]
    assert np.abs(y.mean(0) - 1.0).max() < 1e-5
    assert list(witness_attribute_patches(_Case, "bn", _bn_case(), "torchscript")) == []   # nothing differs
