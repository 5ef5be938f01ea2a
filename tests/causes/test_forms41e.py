"""Held-out batch 41E for issue 30 (tests/causes/forms41e.py): a blind first run on forms nobody here has tuned on,
screened in DYNAMIC SHAPES as the exporters capture them: each file declares a dim dynamic (``dynamic_axes`` /
``dynamic_shapes``), is exported at its shortest size and run, as a served model is, at longer ones (forms41e's
docstring lists the ~45 forms screened that agree, do not export, or drift by a held mechanism).  What drifts beyond
the held mechanisms is a size of the example frozen into an int argument the ONNX op holds as an attribute or a
constant bound: a pooling window (``F.max_pool1d(h, h.size(2))``, ``F.avg_pool1d(h, h.size(2))`` and an SPP pyramid
traced by TorchScript; ``adaptive_avg_pool1d`` / ``AdaptiveMaxPool2d`` lowered by the dynamo exporter from torch's
decomposition at the example's size) and a roll's shift (``torch.roll(x, x.size(1) // 2, 1)``, TorchScript's symbolic
reads it as an int).  Each drifts with one exporter: the other refuses the export or specialises the dim (a static
file ONNX Runtime refuses at other sizes: an error, not a drift).  What a right answer is, by mechanism (written
before the first run's causes were read; /tmp/heldE/judge.md of session 40): the origin ``body`` (``pool`` for
``grid_pool``), class ``dynamic-axes`` (a size baked in at export time), the story naming the window / shift taken
from the example's size where the file declares the dim dynamic, and a repair that computes it from the runtime size
(``check`` of the repaired file passes on samples of other sizes: a static re-export fitted to one size does not).

First run, engine as on main at 8444775 (``drifttui diagnose`` / ``repair`` / ``check --seed 7`` through
/tmp/heldE/firstrun.sh, 3 samples, never tuned on these forms; seconds on a 2-core machine shared with other
sessions):

| pair | origin | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|---|
| text_cnn torchscript (shallow) | right | **no**: ``padding``, "the graph itself computes something else than PyTorch", fix "the exporter's lowering of max_pool1d" | no | **no** ("no patch among 15 tried") | **no** (exit 4) | 39 s / 53 s |
| se_gate torchscript (deep) | right | **no**: ``padding``, the same (``avg_pool1d``) | no | **no** (21 tried) | **no** | 58 s / 39 s |
| pyramid torchscript (deep) | right | **no**: ``padding`` | no | **no** (10 tried) | **no** | 65 s / 29 s |
| segments dynamo (deep) | right | **no**: ``padding`` (``adaptive_avg_pool1d``) | no | **no** (15 tried) | **no** | 45 s / 84 s |
| grid_pool dynamo (shallow) | right (``pool``) | **no**: ``padding`` (``adaptive_max_pool2d``) | no | **no** (2 tried) | **no** | 47 s / 44 s |
| roll_center torchscript (deep) | right | **no**: ``lowering`` of ``torch.roll`` | no | **no** (19 tried) | **no** | 62 s / 50 s |
| controls: se_adaptive torchscript, segments_one dynamo, roll_fixed torchscript | ok, no error finding | | | | | 40 s, 25 s, 27 s |

First run: origin 6/6; class by mechanism and verified 0/6; told 0/6; repair passing ``check`` 0/6; controls 3/3
clean.  4 of the 6 pairs sit in deep models (20 module calls).

Why the misses (what decided it): every re-export on the runtime shapes computed torch's values on the worst sample
(the static TorchScript and dynamo exports of the origin at its size), and every one failed on the fresh samples of
other sizes (``holds.py``): a static export fits one size.  No graph patch reached what was frozen: the catalogue's
pooling patches flip ``ceil_mode`` / ``count_include_pad``, the baked-size patch (``runtime_size``) reads float
scalars holding ``d``, ``1/d``, ``d**+-0.5``, not a pool's ``kernel_shape`` (an attribute, which no runtime size can
reach) nor a ``Slice``'s integer bounds holding ``-(T // 2)``.  So the head fell back to the class of the first op
recognised (``padding`` for a pool) or the lowering of the torch op the values name.

Fixed generically (no form's name, size or op list): ``propose/edits/frozen_window.py`` (edit
``onnx/edit/lowerings/adaptive_window.py``, ``test_frozen_window.py``): a ``MaxPool`` / ``AveragePool`` without padding
whose windows tile its input (``strides == kernel_shape``) on a dim the file declares dynamic, which on this sample
leaves steps out, is computed as torch's adaptive windows of the runtime size (masks from ``Range``, ``Shape``); and
``propose/reexport/frozen_ints.py`` (edit ``onnx/edit/lowerings/runtime_int.py``, ``test_frozen_ints.py``): for a
TorchScript file with a dynamic dim, the origin traced again by the file's exporter at the worst and the fresh samples'
sizes; an integer constant of the origin that changes with a dynamic size and fits ``s * ((a d + r) // q) + b`` on
every trace is computed from the runtime shape (all such constants at once first: a roll's two slices).  Both class
``dynamic-axes``, verified on the worst and fresh samples of other sizes, written by ``repair``.

After the fixes (same harness with this engine, /tmp/heldE/after1):

| pair | class by mechanism | told | verified | repair passes check | diagnose / repair |
|---|---|---|---|---|---|
| text_cnn torchscript | yes: ``dynamic-axes``, ``adaptive_window`` on the MaxPool ("pools windows of 32 (kernel_shape = strides) along its input's dim 2, which the file declares dynamic: a window taken from the example's size") | yes | yes | yes | 38 s / 34 s |
| se_gate torchscript | yes: the same on the AveragePool | yes | yes | yes | 40 s / 27 s |
| segments dynamo | yes: the same on the AveragePool of the decomposed ``adaptive_avg_pool1d`` | yes | yes | yes | 19 s / 23 s |
| grid_pool dynamo | yes: the same on the MaxPool of ``adaptive_max_pool2d`` (origin ``pool``) | yes | yes | yes | 13 s / 12 s |
| roll_center torchscript | yes: ``dynamic-axes``, ``runtime_int`` on both slices ("integers the trace took from the example's size ... follow -(d // 2)") | yes | yes | yes | 24 s / 15 s |
| pyramid torchscript | no: ``padding``, unverified (strict xfail: SPP windows are neither adaptive nor integer constants) | no | no | no | 50 s / 35 s |
| controls (3) | ok, no error finding | | | | 18 s, 14 s, 14 s |

After: class by mechanism and verified 5/6, told 5/6, repair passing ``check`` 5/6; controls 3/3 clean.
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms, missed,
                                     params)

_WINDOW = ("dynamic-axes", "rewrite", {"rewrite": "adaptive_window"}, "a window taken from the example's size")
_INTS = ("dynamic-axes", "sequence", {}, "integers the trace took from the example's size")
# (model, exporter) -> the head finding a right answer gives: (class, patch op, what it changed, words)
REPAIRED = {("text_cnn", "torchscript"): _WINDOW, ("se_gate", "torchscript"): _WINDOW,
            ("segments", "dynamo"): _WINDOW, ("grid_pool", "dynamo"): _WINDOW,
            ("roll_center", "torchscript"): _INTS}
MISSED = {("pyramid", "torchscript"): ("dynamic-axes", "rewrite", {}, "example's size")}
CLEAN = [("se_adaptive", "torchscript"), ("segments_one", "dynamo"), ("roll_fixed", "torchscript")]
ORIGIN = {"grid_pool": "pool"}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes import forms41e

    return explained_forms(tmp_path_factory, "forms41e", inputs={m: v[0] for m, v in forms41e.INPUTS.items()},
                           export=forms41e.export_kwargs, examples={m: v[1] for m, v in forms41e.INPUTS.items()})


@pytest.mark.parametrize("form", params(REPAIRED, set()))
def test_a_size_of_the_example_frozen_into_a_window_or_a_bound_is_computed_from_the_runtime_size(explained, form):
    assert_verified_and_repaired(explained, form, REPAIRED[form], ORIGIN.get(form[0], "body"))


@pytest.mark.parametrize("form", missed(MISSED, "SPP-net's windows (ceil(T / n) steps, centred by a padding of "
                                        "int((k n - T + 1) / 2)) are neither adaptive windows nor a trace's integer "
                                        "constants: the kernel, stride and pads are attributes no graph edit here "
                                        "recomputes"))
def test_a_spatial_pyramid_of_the_example_length_is_computed_from_the_runtime_length(explained, form):
    assert_verified_and_repaired(explained, form, MISSED[form], "body")


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_held_out_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_at_least_half_the_forms_sit_inside_deep_models(explained):
    forms = [*REPAIRED, *MISSED]
    deep = deep_forms(explained, forms)
    assert len(deep) * 2 >= len(forms), deep
