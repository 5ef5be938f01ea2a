"""Held-out batch 44M for issue 30 (tests/causes/forms44m.py): a blind first run on forms nobody here has tuned on,
screened in GRAPH NEURAL NETWORKS, POINT CLOUDS AND RECOMMENDER / TABULAR MODELS WRITTEN IN PLAIN TORCH (message
passing by ``scatter_add`` / ``index_add`` / ``scatter_reduce``, GCN / GIN / GAT / GraphSAGE layers, k-NN, farthest
point sampling, ball query, PointNet pools; ``EmbeddingBag``, feature hashing, ``bucketize``, DCN / FM / DLRM
interactions; forms44m's docstring lists the ~210 exports screened).  The exporters compute what torch computes for
nearly all of it, or refuse it (TorchScript's duplicate ``index_add_``, ``scatter_reduce`` mean /
``include_self=False``); what drifts past the tolerance is a catalogue mechanism in a new form (TorchScript's
truncating integer ``floor_divide`` inside feature hashing, ``Log(1 + x)`` for ``log1p`` of a small dense rate, the
dynamo ``scatter_reduce("mean")`` lowering inside a GraphSAGE layer, a ``topk`` tie order of a point cloud padded
with copies of a point) or torch's own randomness (farthest point sampling from a ``torch.randint`` start).  What a
right answer is (written before the first run's causes were read; /tmp/h44M/judge.md): the origin ``body``; the
hashing's truncating ``Div`` (class ``dtype``, as the catalogue files it) put back as a floored division; ``log1p``
(``stability``) rewritten to the accurate form; the scatter mean (``lowering``) recomputed by its definition; each
verified and repaired; the ties named at the ``topk`` (``op-compat``), no patch; the random start named
(``torch.randint``), no patch; the controls without an error.

First run, engine at the branch base (19efddfe, ``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/h44M/firstrun.sh, 3 samples, 5 for the repaired file's check):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| hash_bucket torchscript (deep) | right | yes: ``dtype`` (truncating ``Div``, ``floor_div`` rewrite) | yes (``//``) | yes | yes | 16 s / 15 s |
| rate_log1p torchscript (shallow) | right | yes: ``stability`` (``log1p`` rewrite) | yes | yes | yes | 10 s / 9 s |
| rate_log1p dynamo (shallow) | right | yes: ``stability`` | yes | yes | yes | 6 s / 6 s |
| sage_mean dynamo (deep) | right | yes: ``lowering`` (``ScatterElements(reduction='none')``; re-export by make_fx) | yes (``scatter_reduce``) | yes | yes | 15 s / 10 s |
| padded_knn torchscript (shallow) | **wrong: ``body.emb``** | **no: ``versions``, falsely verified** (a re-export of the embedding fed torch's indices) | no | **false** | n/a (none written, said) | 9 s / 3 s |
| padded_knn dynamo (shallow) | right | yes: ``op-compat`` ties | yes (``topk``) | n/a (no patch exists, said) | n/a | 18 s / 19 s |
| fps_random torchscript (deep) | none named (a note: torch differs from itself, first at ``body``) | **no error finding** | no | n/a | n/a (nothing to repair) | 4 s / 2 s |
| fps_random dynamo (deep) | none named (the same note) | **no error finding** | no | n/a | n/a | 8 s / 6 s |
| controls hash_bucket dy, rate_log1p_coarse ts, sage_sum dy, gcn ts + dy, fps_first ts + dy, knn_unpadded ts + dy | ok (9/9) | | | | | 4-12 s |

First run: origin 5/8 (fps_random has no export origin by design: counted as missed for the judge's ``body``);
class by mechanism 5/8; told 5/8; verified 4/4 where a patch exists (and one false verification: padded_knn ts);
repair passing check 4/4, the ties said unrepairable 1/2; controls 9/9.

Fixed generically:
* ``prepare/plan/pairing.py``: the one integer value that fits a call's one input of its kind is that input, whatever
  it holds (its size unknown in the TorchScript file, the sample-0 shape decides).  TopK's tied indices differed from
  torch's, so content pairing left the embedding's input unpaired; its local run then computed TopK itself and the
  embedding became the origin, "verified" by re-exporting it on torch's indices.  ``tests/engine/test_integer_pairing.py``.
* ``explain/checks/randomness.py`` (custom-module): where torch differs from itself, one forward under a dispatch mode
  records the ``nondeterministic_seeded`` ATen ops it calls and the module calling each (a dropout with
  ``train=False`` draws nothing): an error finding names the draw (``torch.randint`` in ``body``), the file's own
  random nodes, and that no patch exists.  ``tests/engine/test_random_draws.py``.

After (the CLI, seed 7, /tmp/h44M/run2, and this file): padded_knn ts: origin ``body``, ``op-compat`` ties, told,
said unrepairable; fps_random ts + dy: the error finding names ``torch.randint`` in ``body``, no patch; the other
pairs unchanged.  Totals: class by mechanism 8/8, told 8/8, verified and repair passing check 4/4 where a patch
exists, no false verification, the no-patch forms said so 4/4; controls 9/9; origin 6/8 (fps_random still names no
export origin, by design: torch is not its own reference).
Left: nothing of this batch repairable; the angle's other drifts do not export or run (ONNX Runtime has no float16
``ScatterElements`` add / max kernel; ``index_reduce``, ``searchsorted``) or sit within drifttui's float16 budget
(float16 DCN / FM / DLRM / DGCNN k-NN, 1e-3 of the scale).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, params

# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("hash_bucket", "torchscript"): ("dtype", "rewrite", {"rewrite": "floor_div"}, "floor_divide"),
            ("rate_log1p", "torchscript"): ("stability", "rewrite", {"rewrite": "log1p"}, "log1p"),
            ("rate_log1p", "dynamo"): ("stability", "rewrite", {"rewrite": "log1p"}, "log1p"),
            ("sage_mean", "dynamo"): ("lowering", "reexport", {}, "scatter_reduce")}
# tie orders: no graph edit reproduces torch's order; a right answer names the ties and says no patch exists
TIES = [("padded_knn", "torchscript"), ("padded_knn", "dynamo")]
# torch draws random numbers in the forward: no origin is the export's; a right answer names the draw, no patch
RANDOM = [("fps_random", "torchscript"), ("fps_random", "dynamo")]
CLEAN = [("hash_bucket", "dynamo"), ("rate_log1p_coarse", "torchscript"), ("sage_sum", "dynamo"),
         ("gcn", "torchscript"), ("gcn", "dynamo"), ("fps_first", "torchscript"), ("fps_first", "dynamo"),
         ("knn_unpadded", "torchscript"), ("knn_unpadded", "dynamo")]


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms44m")


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_graph_or_recommender_form_is_explained_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], "body")


@pytest.mark.parametrize("form", params(TIES, set()))
def test_a_tie_order_of_padded_points_is_named_at_the_knn_and_said_unrepairable(explained, form):
    from drifttui.core.explain.causes.deliver.repair import repair_patches
    from drifttui.core.onnx.graph import full_model

    _, _, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin.module == "body", result.drift_origin
    head = next(f for f in exp.findings if f.severity == "error")
    assert (head.check, head.verified) == ("op-compat", False), (head.check, head.message)
    assert "topk" in head.message and "tied values" in head.message and "no patch exists" in head.message
    assert repair_patches(full_model(run.prepared.index), run.result, exp)[0].model is None


@pytest.mark.parametrize("form", params(RANDOM, set()))
def test_a_random_draw_in_the_forward_is_named_with_its_module_and_no_patch(explained, form):
    _, _, run, result, exp = explained(*form)
    assert result.verdict == "drift" and result.drift_origin is None
    head = next(f for f in exp.findings if f.severity == "error")
    assert (head.check, head.module, head.verified) == ("custom-module", "body", False), (head.check, head.message)
    assert "torch.randint" in head.message and "no patch exists" in head.message, head.message


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = list(REPAIRED)
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
