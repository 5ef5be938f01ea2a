"""Held-out batch 44L for issue 30 (tests/causes/forms44l.py): a blind first run on forms nobody here has tuned on,
screened in STATE-SPACE AND RECURRENT SEQUENCE MODELS WRITTEN IN PLAIN TORCH (Mamba's selective scan and mamba.py's
parallel scan, Mamba2's chunked SSD, S4D kernels, RetNet / GLA decay masks, linear attention, RWKV time mixing,
xLSTM's mLSTM, minGRU's log-space scan, causal conv1d, RMSNorm variants; transformers' MambaModel / Mamba2Model /
RwkvModel; float32, ``.half()`` and autocast; forms44l's docstring lists the ~120 exports screened).  What a right
answer is (written before the first run's causes were read; /tmp/h44L/judge.md): the origin ``body`` (``body.ssm``
for the block whose SSM holds the scan); mamba.py's in-place ``pscan``: ``lowering`` (aliasing + mutation, the
in-place op named), verified by the dynamo re-export, repaired; dynamo's ``logcumsumexp``: ``lowering`` naming it,
verified, repaired; the float16 minGRUs: ``dtype`` (ONNX Runtime's dropped float16 rounding), verified, repaired;
the controls without an error.

First run, engine at the branch base (19efddfe, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h44L/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| pscan_ssm torchscript (shallow) | right | yes: ``lowering``, aliasing | yes: ``aten.add_`` through ``aten.select`` of ``aten.view`` | yes (dynamo re-export) | yes | 15 s / 15 s |
| pscan_block torchscript (shallow) | right: ``body.ssm`` | yes | yes | yes | yes | 13 s / 14 s |
| mingru_long dynamo (deep) | right | yes: ``lowering`` | yes: ``aten.logcumsumexp`` | yes (make_fx re-trace) | yes | 19 s / 18 s |
| mingru_half dynamo (shallow) | right | **no**: ``op-compat`` (the fallback) | **no** (``log``) | **no** (29 patches) | **no file** | 16 s / 13 s |
| lcse_half torchscript (deep) | right | yes: ``dtype``, dropped float16 rounding | yes: ``exp`` | yes (``opmath_float32`` per_op) | yes (WITHIN BUDGET) | 15 s / 9 s |
| lcse_half dynamo (deep) | right | yes | **no**: names ``amax`` | yes | yes (WITHIN BUDGET) | 9 s / 13 s |
| controls pscan_ssm dy, pscan_block dy, scan_loop ts, mingru_short dy, lcse_float ts + dy | ok (6/6) | | | | | 6-10 s |

First run: origin 6/6; class by mechanism 5/6; told 4/6; verified 5/6; repair passing check 5/6; controls 6/6.

Fixed generically: ``propose/numerics/opmath.py`` gets a fourth form, ``per_call`` (a dynamo file records the FX call
each node translates: every float16 node in float32, rounded where a call's nodes end; ``per_op`` rounds inside
``logcumsumexp``'s six-node lowering, ``whole`` not between the ops around it), judged at the float16 budget
(``locate/case.judged``: a patch's own ``rtol``; inside the call torch's kernel and the lowering's formula differ in
float32's last bits, and a flipped rounding is amplified by ``a* + scan``'s cancellation); test_opmath_per_call.py.
Its story and fix name the call (``spec["decisive"]``).  After (the CLI, seed 7, /tmp/h44L/run3 and run4): origin 6/6,
class 6/6, told 5/6, verified 6/6, repair passing check 5/6; controls 6/6; diagnose / repair 5-12 s / 2-16 s.
Left: ``mingru_half``'s repaired file is still OVER BUDGET on fresh samples (float32 noise before the model's
``.half()`` flips roundings the cancellation amplifies: no module is the origin there), and ``lcse_half``'s dynamo
story names ``amax`` where the decisive rounding is ``exp``'s underflow (a strict xfail each).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed,
                                     params)

INPUTS = {"pscan_ssm": "seq16_inputs", "pscan_block": "seq16_inputs", "scan_loop": "seq16_inputs",
          "mingru_long": "seq256_inputs", "mingru_short": "seq12_inputs", "mingru_half": "seq64_inputs",
          "lcse_half": "seq64_inputs", "lcse_float": "seq64_inputs"}
_ALIASED = ("lowering", "reexport", {"exporter": "dynamo"}, "in-place update torch.Tensor.add_")
_ROUNDING = ("dtype", "rewrite", {"rewrite": "opmath_float32"}, "drops the float16 rounding")
_PER_CALL = ("dtype", "rewrite", {"rewrite": "opmath_float32", "form": "per_call"}, "aten.logcumsumexp.default as")
# (model, exporter) -> (origin, the head finding a right answer gives: class, patch op, what it changed, words)
REPAIRED = {("pscan_ssm", "torchscript"): ("body", _ALIASED), ("pscan_block", "torchscript"): ("body.ssm", _ALIASED),
            ("mingru_long", "dynamo"): ("body", ("lowering", "reexport", {"retrace": "make_fx_core_aten"},
                                                 "aten.logcumsumexp")),
            ("lcse_half", "torchscript"): ("body", _ROUNDING), ("lcse_half", "dynamo"): ("body", _ROUNDING)}
CLEAN = [("pscan_ssm", "dynamo"), ("pscan_block", "dynamo"), ("scan_loop", "torchscript"), ("mingru_short", "dynamo"),
         ("lcse_float", "torchscript"), ("lcse_float", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms44l", inputs=INPUTS)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_state_space_form_is_explained_verified_and_repaired(explained, form):
    origin, expected = REPAIRED[form]
    assert_verified_and_repaired(explained, form, expected, origin)


@pytest.mark.parametrize("form", params([("mingru_half", "dynamo")], set()))
def test_a_float16_logcumsumexp_amid_a_mingru_is_computed_per_call(explained, form):
    """Fixed after the first run (op-compat, unverified): the per_call opmath form verifies at the float16 budget."""
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    _, _, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    cls, op, changed, words = _PER_CALL
    assert (head.check, head.verified, head.severity) == (cls, True, "error"), (head.check, head.message)
    assert head.patch["op"] == op and all(head.patch.get(k) == v for k, v in changed.items()), head.patch
    assert words in head.message, head.message
    assert repair(full_model(run.prepared.index), exp).model is not None


@pytest.mark.parametrize("form", missed([("mingru_half", "dynamo")], "the repaired file is over budget on fresh "
                                        "samples: float32 noise before .half() flips roundings a* + scan amplifies"))
def test_a_repaired_float16_mingru_passes_check(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair
    from drifttui.core.onnx.graph import full_model

    engine, cfg, run, _, exp = explained(*form)
    assert engine.recheck(cfg, repair(full_model(run.prepared.index), exp).model).verdict == "ok"


@pytest.mark.parametrize("form", missed([("lcse_half", "dynamo")], "the story names amax (torch_align's first "
                                        "differing op), not exp, whose float16 underflow is the drift"))
def test_the_float16_underflow_story_names_exp(explained, form):
    _, _, _, _, exp = explained(*form)
    assert "torch's exp" in exp.findings[0].message, exp.findings[0].message


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, ("mingru_half", "dynamo")]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
