"""Held-out batch 45Q for issue 30 (tests/causes/forms45q.py): a blind first run on forms nobody here has tuned on,
screened in THE NUMERICS OF LLM INFERENCE CODE WRITTEN IN PLAIN TORCH (rotary variants, NTK / YaRN scaling, ALiBi,
sliding-window and causal masks, soft-capping, RMSNorm ``(1 + w)`` with its upcast, GeGLU / SwiGLU, grouped-query
attention, KV-cache writes, int8 / int4 / GPTQ dequantisation in forward, activation quantisation, temperature and
``log_softmax``; float16 and bfloat16 variants; transformers decoders in float16; forms45q's docstring lists the
~130 exports screened).  In float32 both exporters compute what torch computes; what drifts past the tolerance is
TorchScript's truncating lowering of ``>>`` of a signed tensor where int4 / GPTQ weights are unpacked from the
module's buffers, and ONNX Runtime's dropped float16 roundings where a temperature or a rounding to quantisation
levels magnifies them.  What a right answer is (written before the first run's causes were read; /tmp/h45Q/judge.md):
the origin ``body``; for the shifts, class ``lowering``, the ``floor_div`` patch verified and repaired, the message
naming torch's ``>>``; for the float16 forms, class ``dtype``, verified, a repair that passes ``check``; the
controls without an error.

First run, engine at the branch base (23bf634b, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h45Q/firstrun.sh, 3 samples, 5 for the repaired file's check; ``gptq_unpack`` TorchScript from the user's
opset-18 file, ``--onnx``: drifttui's own TorchScript export at opset 17 refuses ``aten::bitwise_and``):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| gptq_unpack torchscript (deep) | right | yes: ``lowering``, ``floor_div`` | **no**: "in torch's matmul" (the shift's story follows: "torch called >>") | yes | yes | 13 s / 15 s |
| nibble_signext torchscript (deep) | right | yes: ``lowering``, ``floor_div`` | **no**: "in torch's linear" | yes | yes | 11 s / 12 s |
| softcap_temperature torchscript (shallow) | right | yes: ``dtype``, ``opmath_float32`` | yes: "torch's tanh" | yes | yes | 9 s / 6 s |
| softcap_temperature dynamo (shallow) | right | yes, the same | yes | yes | yes | 7 s / 12 s |
| w4a4_half torchscript (deep) | right | yes: ``dtype``, ``opmath_scalar`` (0.1 written as float16) then ``opmath_float32`` | yes: "torch's mul" (the gain, the first op that differs; the judge had expected the division, the engine's reading holds on inspection) | yes | yes | 29 s / 52 s |
| w4a4_half dynamo (deep) | right | yes, the same | yes | yes | yes | 57 s / 62 s |
| controls gptq_unpack dy, gptq_positive ts, nibble_signext dy, softcap_temperature_f32 ts, w4a4_f32 dy, kv_int8_half ts | ok (6/6: 3 OK, 3 WITHIN BUDGET) | | | | | 15-44 s |

First run: origin 6/6; class by mechanism 6/6; told 4/6; verified 6/6; repair passing check 6/6; controls 6/6.
4 of the 6 pairs sit in deep models.

Fixed generically: ``causes/locate/torch_align.py`` (``_right`` took every torch call on the module's state alone
for a constant the exporter folded; a call the file computes from its constants otherwise, ``align_graph.
state_computed``, is no longer right) and ``align_graph.call_group`` (such a call's nodes read constants only: they
are its lowering, not size arithmetic); ``test_state_computed_otherwise.py`` and ``test_torch_op.py``'s
``nibble_signext``.  After (the CLI, seed 7, /tmp/h45Q/run3): origin 6/6, class 6/6, told 6/6 ("torch's
bitwise_right_shift", "torch's __rshift__", "torch's tanh" x2, "torch's mul" x2), verified 6/6, repair passing
check 6/6 (5 WITHIN BUDGET, 1 OK on 5 samples).  This suite runs on other samples (seed 0), where the float16 forms'
stories differ in which op of the chain is told and in w4a4_half's patch (REPAIRED's comment).  Left: nothing of
this batch.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_SHIFT = ("lowering", "rewrite", {"rewrite": "floor_div"}, "torch called >>")
_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words).  This
# suite's samples (seed 0) are not the first run's (seed 7): on them w4a4_half's head is the per-op rounding alone
# (at seed 7 the float16 gain 0.1 first, then the rounding: a ``sequence``), and the op told is another of the
# float16 chain's (softcap: ``linear``, whose float16 product ONNX Runtime reads unrounded; w4a4: ``round``)
# nibble_signext's two shifts are two integer Divs: since 47D's case compares every wrong child input, the floor
# division at one Div leaves the other's wrong, and the head is the floor division at both (propose/edits/int_sites)
_BOTH = [{"op": "rewrite", "node": f"/body/{d}", "rewrite": "floor_div", "to": 3} for d in ("Div", "Div_1")]
REPAIRED = {("gptq_unpack", "torchscript"): _SHIFT,
            ("nibble_signext", "torchscript"): ("lowering", "sequence", {"patches": _BOTH}, "torch called >>"),
            ("softcap_temperature", "torchscript"): _ROUNDING, ("softcap_temperature", "dynamo"): _ROUNDING,
            ("w4a4_half", "torchscript"): _ROUNDING, ("w4a4_half", "dynamo"): _ROUNDING}
# the torch op the head finding's message opens with (a call the forward made, of the drifting chain)
# (the soft-capping chain: with 45P's decisive rounding, the rounding whose omission brings back the most of the drift
# is that of ``tanh(.) * cap``'s ``mul``, on this suite's samples: /body/Mul_1, node_mul_2)
_CAP, _QUANT = ("in torch's tanh", "in torch's linear", "in torch's mul"), ("in torch's mul", "in torch's round")
TOLD = {("gptq_unpack", "torchscript"): ("in torch's bitwise_right_shift",),
        ("nibble_signext", "torchscript"): ("in torch's __rshift__",),
        ("softcap_temperature", "torchscript"): _CAP, ("softcap_temperature", "dynamo"): _CAP,
        ("w4a4_half", "torchscript"): _QUANT, ("w4a4_half", "dynamo"): _QUANT}
CLEAN = [("gptq_unpack", "dynamo"), ("gptq_positive", "torchscript"), ("nibble_signext", "dynamo"),
         ("softcap_temperature_f32", "torchscript"), ("w4a4_f32", "dynamo"), ("kv_int8_half", "torchscript")]
FAST = {("nibble_signext", "torchscript")}
# aten::bitwise_and needs opset 18 from the TorchScript exporter (the user's file, exported as torch advises)
OPSET = {"gptq_unpack": 18, "gptq_positive": 18}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms45q", opset=OPSET)


@pytest.mark.parametrize("form", params(REPAIRED, FAST))
def test_an_llm_inference_form_is_explained_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(TOLD, FAST))
def test_the_head_finding_names_the_torch_op_that_was_called(explained, form):
    _, _, _, _, exp = explained(*form)
    assert exp.findings[0].message.startswith(TOLD[form]), exp.findings[0].message[:200]


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
