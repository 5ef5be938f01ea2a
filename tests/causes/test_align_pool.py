"""The alignment of an origin against its re-export (localise_nodes.align) compares each value with
the witness's through ``Pool``: a few sampled elements rule candidates out before a whole comparison.
It must answer exactly what the whole comparison (``_matches``) answers, for every value kind."""
from __future__ import annotations

import numpy as np


def _values(rng):
    base = [rng.standard_normal((3, 8)).astype(np.float32) for _ in range(30)]
    out = list(base)
    for b in base[:10]:
        within = b + np.float32(1e-5)                  # atol 1e-4: within
        out.append(within)
        beyond = b.copy()
        beyond.ravel()[5] += 0.5                       # one element off, maybe not a sampled one
        out.append(beyond)
    odd = base[0].copy()
    odd[0, 0], odd[1, 1] = np.nan, np.inf
    out += [odd, odd.copy(), np.where(odd == np.inf, -np.inf, odd).astype(np.float32)]
    out += [b.astype(np.float16) for b in base[:3]]
    ints = rng.integers(-5, 5, (3, 8))
    out += [ints, ints.copy(), ints + (np.arange(24).reshape(3, 8) == 17), ints.astype(np.float32) + 0.4]
    out += [np.zeros((0, 8), np.float32), rng.standard_normal((8,)).astype(np.float32), (ints > 0)]
    return out


def test_the_pool_answers_what_the_whole_comparison_answers():
    from drifttui.core.explain.causes.locate.localise_nodes import Pool, _matches

    rng = np.random.default_rng(0)
    values = _values(rng)
    for half in (0, 1):
        witness = values[half::2]
        pool = Pool(witness)
        answers = []
        for a in values:
            for atol, rtol in ((1e-4, 1e-4), (0.0, 0.0)):
                want = _matches(a, witness, atol, rtol)
                assert pool.matches(a, atol, rtol) == want, (a, atol, rtol)
                answers.append(want)
        assert any(answers) and not all(answers)        # the cases cover both answers
