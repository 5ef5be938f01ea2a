"""A lowering that types a value otherwise than torch (tests/causes/forms_retyped.py): the FX localisation
names the torch op whose ONNX output type does not hold torch's values (``aten.__lshift__``, uint8 -> int8),
not the ``.float()`` after it that reads the wrapped value; the cause is verified and repaired.

First run (the engine at session 29's start): the origin right and the cause verified and repaired (a
TorchScript re-export), but the message blamed ``aten._to_copy`` (the ``Cast`` to float, "its own error is
256"): the FX localisation fed and compared torch's values in the file's type, where uint8 252 is int8 -4,
so the shift looked right and the next node wrong."""
from __future__ import annotations

import pytest

from tests.causes.form_suite import assert_clean, assert_verified_and_repaired, explained_forms, params

_SHIFT = ("lowering", "reexport", {"exporter": "torchscript"}, "its output is int8 where torch's is uint8")
VERIFIED = {("shift_code", "dynamo"): _SHIFT, ("shift_code_shallow", "dynamo"): _SHIFT}
CLEAN = [("shift_down", "dynamo"), ("shift_code", "torchscript")]
FAST = {("shift_code_shallow", "dynamo")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms_retyped")


@pytest.mark.parametrize("form", params(VERIFIED, FAST))
def test_the_retyping_lowering_is_named_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, VERIFIED[form], "body")
    head = explained(*form)[4].findings[0]
    assert "aten.__lshift__" in head.message and "_to_copy" not in head.message, head.message


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_a_shift_whose_values_fit_the_file_type_is_clean(explained, form):
    assert_clean(explained, form)
