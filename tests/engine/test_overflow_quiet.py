"""A float16 file whose values pass 65504 is told by the comparison (inf, an overflow finding), never by numpy's
"overflow encountered in cast" printed on the user's terminal (session 37's deploy review: the weight check and the
FX localisation cast torch's float32 values to the file's float16)."""
from __future__ import annotations

import warnings

import numpy as np


def test_casting_torch_s_values_to_the_file_s_float16_prints_no_numpy_warning():
    from drifttui.core.explain.causes.locate.fx_localise import as_like
    from drifttui.core.explain.checks.custom_module import _stored_rounded

    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a RuntimeWarning would fail here
        assert np.isinf(as_like(np.array([1e6, 1.0], np.float32), np.zeros(2, np.float16))[0])
        # a weight past float16's range stored as inf is not "the model's weight rounded": it is reported
        assert not _stored_rounded(np.array([np.inf], np.float16), np.array([1e6], np.float32))
        assert _stored_rounded(np.array([1.0], np.float16), np.array([1.0001], np.float32))
