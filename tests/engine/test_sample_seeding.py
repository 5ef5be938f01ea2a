"""A sample drawn again is the same sample: the per-layer pass of the worst samples draws them a
second time, after the output pass has seen every sample."""
from __future__ import annotations

import random

import numpy as np
import torch


def test_api_callable_samples_are_a_function_of_their_index_and_leave_the_callers_rng_alone():
    from drifttui.core.model import memory
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.spec import parse_input_spec

    def draw(i):
        return torch.tensor(np.random.rand(3) + random.random(), dtype=torch.float32) + torch.rand(3)

    token, _ = memory.register_samples(draw, 4)
    try:                # a registration this test leaves would be another test's leak (test_python_api checks)
        src = build_source(parse_input_spec(token), 0, False, None)
        np.random.seed(123)
        random.seed(123)
        before = (np.random.get_state()[1].copy(), random.getstate())
        first = [src.sample(i)[0][0].clone() for i in range(4)]
        again = [src.sample(i)[0][0].clone() for i in (3, 1, 2, 0)]
    finally:
        memory.unregister(token)
    assert all(torch.equal(a, b) for a, b in zip(first, [again[3], again[1], again[2], again[0]]))
    assert not torch.equal(first[0], first[1])
    assert (np.random.get_state()[1] == before[0]).all() and random.getstate() == before[1]


def test_cli_callable_samples_are_a_function_of_their_index(tmp_path):
    from drifttui.core.model.inputs import build_source
    from drifttui.core.model.spec import parse_input_spec

    f = tmp_path / "inputs.py"
    f.write_text("import random\nimport numpy as np\nimport torch\n\n"
                 "def make():\n    return torch.tensor(np.random.rand(3) + random.random(), dtype=torch.float32)\n")
    src = build_source(parse_input_spec(f"{f}:make"), 0, False, None)
    a, b = src.sample(2)[0][0].clone(), src.sample(5)[0][0].clone()
    assert torch.equal(src.sample(2)[0][0], a) and not torch.equal(a, b)
    # the one seeding rule: the caller's generators are left as they were, as for the Python API
    np.random.seed(7)
    random.seed(7)
    state = (np.random.get_state()[1].copy(), random.getstate(), torch.random.get_rng_state())
    src.sample(3)
    assert (np.random.get_state()[1] == state[0]).all() and random.getstate() == state[1]
    assert torch.equal(torch.random.get_rng_state(), state[2])
