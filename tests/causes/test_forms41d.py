"""Held-out batch 41D for issue 30 (tests/causes/forms41d.py): a blind first run on forms nobody here has tuned on,
screened in the recurrent and convolutional families as exported and as ONNX Runtime's CPU kernels compute them
(forms41d's docstring lists what was screened and matched: the convolution variants all match; the recurrent modules
match in float32 except through a packed sequence's padding).  What a right answer is, by mechanism (written before
the first run; /tmp/heldD/judge.md of session 40):
* ``packed_max`` / ``packed_tags`` (TorchScript only: the dynamo exporter cannot export packed sequences): origin
  ``body``, class ``lowering``: the TorchScript symbolic of ``aten::_pad_packed_sequence`` drops ``padding_value``
  (pytorch/pytorch#28423) and the ONNX LSTM / GRU writes 0 at the steps past each length; told: the padding value /
  padded steps; repaired by writing the padding value there;
* ``half_memory`` / ``half_bilstm`` / ``half_leaky`` (both exporters): origin ``body``, class ``dtype``: ONNX Runtime
  has no float16 LSTM / GRU kernel, runs the node through float32 Casts and keeps the state in float32, where torch's
  float16 cell rounds each op of each step; told: the recurrent node's dropped per-step float16 rounding; repaired by
  the node computed with torch's roundings.  NOT ``lowering`` (both exporters write the same right node), NOT an
  ill-conditioned model.

First run, engine as on main at 8444775f (``drifttui diagnose`` / ``repair`` / ``check`` through
/tmp/heldD/firstrun.sh and /tmp/heldD/fr_fp16.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine
shared with three other sessions, load 13-15; the float16 forms' diagnose limited to 300 s after a first 600-step run
of ``half_memory`` had been stopped after 20 min, STEPS then set to 300 before any result was read):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| packed_max torchscript (deep) | **no**: exit 3, "ONNX Runtime cannot load the graph: Type 'tensor(int64)' of input parameter (feed::/body/Cast_2_output_0) of operator (LSTM)" | no | no | no | **no** (exit 3) | 7 s / 5 s |
| packed_tags torchscript | **no**: exit 3, the same | no | no | no | **no** | 5 s / 6 s |
| half_memory torchscript (deep) | right (``body.rnn``, the run's progress) | **no answer**: over 300 s in the "dynamo exporter after torch's core ATen decompositions" re-export | no | no | not run | > 300 s / - |
| half_memory dynamo (deep) | right | **no answer**: the same | no | no | not run | > 300 s / - |
| half_leaky torchscript | right | **no answer**: the same | no | no | not run | > 300 s / - |
| half_leaky dynamo | right | **no answer**: the same (killed at 526 s) | no | no | no (killed) | 526 s / 112 s |
| half_bilstm torchscript (deep) | right | **no answer**: over 300 s | no | no | not run | > 300 s / - |
| half_bilstm dynamo (deep) | not reached (stopped while mapping, to free the machine for the after run) | no | no | no | not run | - |
| controls: packed_max_zero torchscript | **exit 3** (the same pairing) | | | | | 11 s |
| controls: half_memory_off dynamo, half_leaky_off torchscript | ok, no error finding | | | | | 50 s, 79 s |

First run: origin 5/8 (the float16 ones the run reached; the packed ones never got an answer); class by mechanism and verified 0/8;
told 0/8; repair passing ``check`` 0/8; controls 2/3 clean.  5 of the 8 pairs sit in deep models.

Why the misses (what decided it):
* the packed forms: the LSTM call's torch inputs are a ``PackedSequence``'s four tensors, two of them int64 index
  tensors of the batch's size; the file's int32 ``sequence_lens`` (a Cast of the sorted lengths) fits both by shape,
  and content pairing took the closer of the two (``plan/pairing.pair_inputs_by_content``: "the closest"), so the
  local graph fed torch's sorted indices, int64, as the LSTM's int32 input: ONNX Runtime refused the graph;
* the float16 forms: no proposer edits a recurrent node (opmath's per-op roundings stop at the node: the rounding
  torch drops is inside it), so every re-export was tried, and the core-ATen decomposition of a 300-step recurrence
  runs for minutes.

Fixed generically: integer values pair by content only with the torch input they equal
(``tests/engine/test_integer_pairing.py``); ``propose/edits/packed_padding.py`` (``rewrite: packed_padding``, class
``lowering``: the ``padding_value`` of each ``_pad_packed_sequence`` the origin's forward calls, written at the steps
past each length; ``test_packed_padding.py``); ``propose/numerics/half_recurrence.py`` (``rewrite: half_recurrence``,
class ``dtype`` kind ``runtime``: a float16 LSTM / GRU / RNN computed as torch's CPU cell computes it, one ``Scan``
per direction; ``test_half_recurrence.py``).

After the fixes (same harness, /tmp/heldD/after):

| pair | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| packed_max torchscript (deep) | yes: ``lowering``, ``packed_padding`` ("in torch's pad_packed_sequence ... drops padding_value") | yes | yes (0.154 -> 6.7e-08) | yes | 74 s / 56 s |
| packed_tags torchscript | yes: the same | yes | yes | yes | 92 s / 90 s |
| half_leaky torchscript / dynamo | yes: ``dtype``, ``half_recurrence`` ("ONNX Runtime has no float16 GRU kernel ... keeps the state in float32 over every step") | yes | yes (local error 0.0092 -> 0 on the worst sample) | **no** (strict xfail: 6.2% -> 3.1% at the output, the origin's own error 2.2e-3 on sample 0: a few roundings ONNX Runtime's float32 kernels put on the other side of a float16 tie, amplified by the long memory) | 65 s / 50 s, 94 s / 97 s |
| half_memory, half_bilstm torchscript / dynamo | **no**: the rewrite does not verify (an LSTM with a forget bias of 5 amplifies the same few roundings; the stacked BiLSTM's second layer is not reproduced), then the re-exports as in the first run (strict xfails) | no | no | no | > 300 s |
| controls (3) | ok, no error finding | | | | 80 s (packed_max_zero) |

After: origin 8/8 (half_memory and half_bilstm dynamo not rerun after the fixes, for time); class by mechanism and verified 4/8; told 4/8; repair passing ``check`` 2/8; controls 3/3
clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (_head_verified, assert_clean, assert_verified_and_repaired, deep_forms,
                                     explained_forms, missed, params)

_PADDING = ("lowering", "rewrite", {"rewrite": "packed_padding"}, "drops padding_value")
_HALF = ("dtype", "rewrite", {"rewrite": "half_recurrence"}, "keeps the state in float32")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("packed_max", "torchscript"): _PADDING, ("packed_tags", "torchscript"): _PADDING}
# named and verified at the origin (its local error to 0 on the worst sample), the repaired file over the tolerance
VERIFIED = {("half_leaky", "torchscript"): _HALF}
# session 44: the origin's case now holds the producers of the float16 values ONNX Runtime reads unrounded
# (runtime/unrounded.py, locate/case.with_unrounded_producers); the GRU reads its input so, and with the producer's
# dropped rounding in the case the half_recurrence rewrite alone no longer verifies (it does without the producer).
# The mend: add the producers only where the origin's nodes fed torch's values pass.
LOST = {("half_leaky", "dynamo"): _HALF}
NOT_REPAIRED = {**VERIFIED, **LOST}
NOT_VERIFIED = {(m, e): _HALF for m in ("half_memory", "half_bilstm") for e in ("torchscript", "dynamo")}
CLEAN = [("packed_max_zero", "torchscript"), ("half_memory_off", "dynamo"), ("half_leaky_off", "torchscript")]
ORIGIN = {"half_memory": "body.rnn", "half_bilstm": "body.rnn", "half_leaky": "body.rnn"}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes import forms41d

    return explained_forms(tmp_path_factory, "forms41d", inputs=forms41d.INPUTS)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_recurrent_form_is_named_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN.get(form[0], "body"))


@pytest.mark.parametrize("form", params(VERIFIED, set()))
def test_a_float16_recurrence_is_named_and_verified(explained, form):
    _head_verified(explained, form, VERIFIED[form], ORIGIN[form[0]])


@pytest.mark.parametrize("form", missed(LOST, "the origin's case holds the producer of the GRU's unrounded float16 "
                                        "input (session 44), whose dropped rounding the half_recurrence rewrite does "
                                        "not put back: verified without the producer, not with it"))
def test_a_float16_recurrence_read_unrounded_is_named_and_verified(explained, form):
    _head_verified(explained, form, LOST[form], ORIGIN[form[0]])


@pytest.mark.parametrize("form", missed(NOT_REPAIRED, "torch's per-step float16 rounding is reproduced only up to a "
                                        "few roundings that ONNX Runtime's float32 Sigmoid / Tanh / MatMul put on the "
                                        "other side of a float16 tie, and the long memory amplifies them: the repaired "
                                        "file's own error on another sample is still over the float16 tolerance"))
def test_a_float16_recurrence_is_repaired(explained, form):
    assert_verified_and_repaired(explained, form, NOT_REPAIRED[form], ORIGIN[form[0]])


@pytest.mark.parametrize("form", missed(NOT_VERIFIED, "an LSTM's long memory (a forget bias of 5 over 300 steps) "
                                        "amplifies the few roundings the rewrite does not reproduce past the tolerance, "
                                        "and a stacked layer's roundings are not reproduced (half_bilstm); the "
                                        "re-exports after it spend minutes in the core-ATen decomposition"))
def test_a_float16_lstm_is_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, NOT_VERIFIED[form], ORIGIN[form[0]])


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *VERIFIED, *NOT_VERIFIED]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
