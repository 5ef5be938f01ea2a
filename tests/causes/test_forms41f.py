"""Held-out batch 41F for issue 30 (tests/causes/forms41f.py): a blind first run on forms nobody here has tuned on,
screened in the EXPORT OPTIONS AND MODEL STATES deployers use (forms41f's docstring lists the ~60 exports screened
that agree, do not export, or drift only by a held mechanism).  What drifts beyond the held mechanisms: a file
exported in training mode (``training=TrainingMode.TRAINING`` / ``PRESERVE``, a model left in ``train()`` given to the
dynamo exporter), compared with the model in eval(), and a file whose modules are ONNX local functions
(``export_modules_as_functions``).  What a right answer is, by mechanism (written before the first run's causes were
read; /tmp/heldF/judge.md of session 41): the origin ``body`` (its leaf ``body.drop`` / ``body.norm``, or the
spectral-norm parametrisation computing ``body.lin``'s weight, is as right); the class of the node the train mode
changes (``normalization`` for a BatchNorm / InstanceNorm, ``lowering`` for a Dropout, ``custom-module`` for the
parametrisation's values); the story saying the file computes the module's training-mode forward where the model
compared is in eval(); a repair computing the eval forward (``check`` passes).  For the local functions: the held
``log1p`` story at ``body``, the mapping seeing inside the functions.

First run, engine as on main at 30e03929 (``drifttui diagnose`` / ``repair`` / ``check --seed 7 --samples 5`` through
/tmp/heldF/run.sh, 3 samples; seconds on a 2-core machine shared with three other sessions):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| bn_training torchscript (deep) | right | yes (``normalization``) but the story is "BatchNormalization computes something else than torch", fix "export with --exporter dynamo" | no | yes (eval re-export) | yes | 10 s / 11 s |
| bn_preserve torchscript (shallow) | right | the same | no | yes | yes | 10 s / 6 s |
| inorm_train dynamo (deep) | right (``body.norm``) | label ``normalization``, story "the exporter's lowering of aten.instance_norm is wrong" | no | yes | yes | 15 s / 18 s |
| snorm_train dynamo (shallow) | right (``body.lin.parametrizations.weight``) | **no**: ``normalization``, "the export dropped eps=1e-12" | no | yes | yes | 6 s / 5 s |
| attn_dropout torchscript (deep) | right (``body.drop``) | ``lowering``, "the file computes Dropout (0.1) where today's dynamo exporter computes nothing" | no | yes | yes | 9 s / 11 s |
| attn_dropout_train dynamo (shallow) | right (``body.drop``) | the same | no | yes | yes | 8 s / 15 s |
| log1p_functions torchscript (deep) | **no**: ``head`` (ONNX ``DeepRes``: the whole graph one call node; 2 of 22 calls mapped) | no | no | a re-export of ``head`` "verified" | **no** (exit 1) | 23 s / 14 s |
| log1p_some_functions torchscript (shallow) | right (ONNX ``Log1pScaled``, the call node) | no (``lowering`` of ``mul``) | no | **no** (9 tried) | **no** (exit 4) | 19 s / 29 s |
| controls: bn_eval torchscript, clean_functions torchscript, inorm_eval dynamo | ok, no error finding | | | | | 21 s, 21 s, 25 s |

First run: origin 7/8; class by mechanism (the label and its story) 0/8 (the label alone 5/8); told 0/8; verified
6/8 (+1 a wrong origin's); repair passing ``check`` 6/8; controls 3/3 clean.  4 of the 8 pairs sit in deep models.

Fixed generically: ``onnx/functions.py`` + ``prepare/inlined.py`` (``test_local_functions.py``): model-local functions
inlined in the in-memory copy, each node named by the module its call stands for, as ONNX Runtime inlines them; and
``propose/reexport/train_mode.py`` (``test_train_mode.py``): where a module of the origin reads its ``training`` flag,
the origin exported again by the file's exporter in training and eval mode; the nodes only the training-mode export
writes, all held by the file (``BatchNormalization training_mode=1``, ``Dropout``, ``InstanceNormalization``), or else
that export computing the file's values (a spectral-norm weight folded into constants), tell the story; the source
fix is ``model.eval()`` + ``TrainingMode.EVAL`` (``deliver/source_fix.py``).

After the fixes (same harness with this engine, /tmp/heldF/after; the machine shared with three other sessions):

| pair | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| bn_training torchscript | yes: ``normalization``, "the file computes body's training-mode forward: its nodes hold BatchNormalization (epsilon=1e-05, momentum=0.9, training_mode=1), which the torchscript export of body writes in training mode and not in eval mode" | yes | yes | yes | 26 s / 22 s |
| bn_preserve torchscript | yes: the same | yes | yes | yes | 27 s / 21 s |
| inorm_train dynamo | yes: ``normalization``, the same with InstanceNormalization | yes | yes | yes | 45 s / 40 s |
| snorm_train dynamo | yes: ``custom-module``, "the dynamo export of body.lin.parametrizations.weight in training mode computes the file's values" | yes | yes | yes | 20 s / 18 s |
| attn_dropout torchscript | yes: ``lowering``, the same with Dropout | yes | yes | yes | 29 s / 32 s |
| attn_dropout_train dynamo | yes: the same | yes | yes | yes | 42 s / 42 s |
| log1p_functions torchscript | yes: origin ``body`` (22 of 22 calls mapped), ``stability``, ``log1p`` rewrite | yes | yes | yes | 28 s / 23 s |
| log1p_some_functions torchscript | yes: the same | yes | yes | yes | 18 s / 19 s |
| controls (3) | ok, no error finding | | | | 25 s, 22 s, 26 s |

After: origin 8/8, class by mechanism and told 8/8, verified 8/8, repair passing ``check`` 8/8; controls 3/3 clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

_TRAINED = "training-mode forward"
_NORM = ("normalization", "reexport", {"eval": True}, _TRAINED)
_DROP = ("lowering", "reexport", {"eval": True}, _TRAINED)
_LOG1P = ("stability", "rewrite", {"rewrite": "log1p"}, "Log(1 + x)")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("bn_training", "torchscript"): _NORM, ("bn_preserve", "torchscript"): _NORM,
            ("inorm_train", "dynamo"): _NORM,
            ("snorm_train", "dynamo"): ("custom-module", "reexport", {"eval": True}, _TRAINED),
            ("attn_dropout", "torchscript"): _DROP, ("attn_dropout_train", "dynamo"): _DROP,
            ("log1p_functions", "torchscript"): _LOG1P, ("log1p_some_functions", "torchscript"): _LOG1P}
CLEAN = [("bn_eval", "torchscript"), ("clean_functions", "torchscript"), ("inorm_eval", "dynamo")]
ORIGIN = {"inorm_train": "body.norm", "snorm_train": "body.lin.parametrizations.weight", "attn_dropout": "body.drop",
          "attn_dropout_train": "body.drop"}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes import forms41f

    return explained_forms(tmp_path_factory, "forms41f", inputs=forms41f.INPUTS, export=forms41f.export_kwargs)


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_file_exported_in_training_mode_or_as_local_functions_is_told_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN.get(form[0], "body"))


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
