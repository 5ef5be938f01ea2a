"""The fuzzer's source-derived pool (``benchmarks/fuzz_schema.py``, ``fuzz_drifts.py --pool schema``): the ATen ops
the exporters' own sources lower, called through their schemas.  Seeded (the same seed, the same call and the same
values) and every drawn program runs in torch."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import fuzz_drifts  # noqa: E402
import fuzz_schema  # noqa: E402

SEEDS = range(41000, 41006)


def test_the_pool_comes_from_both_exporters_sources_and_says_what_it_skipped():
    kept, strings, why = fuzz_schema.pool()
    ops = fuzz_schema.exporter_ops()
    names = [name for name, _ in kept]
    assert len(kept) > 150 and names == sorted(names)
    assert any(ops[n] == {"torchscript"} for n in names) and any(ops[n] == {"torchlib"} for n in names)
    assert {"floor", "trunc"} <= set(strings["rounding_mode"])        # literals read from the lowerings
    for _, overloads in kept:
        for _, op in overloads:
            assert not op._schema.is_mutable and torch.Tag.nondeterministic_seeded not in op.tags
    assert why["overload: writes (in-place or out=)"] > 0 and why["overload: random (nondeterministic_seeded)"] > 0
    assert "bernoulli" not in names and "empty" not in names and "add_" not in names


def test_a_seed_draws_the_same_call_each_time():
    x = fuzz_schema.probe()
    for n in SEEDS:
        a, b = fuzz_schema.draw(random.Random(n)), fuzz_schema.draw(random.Random(n))
        assert a[1] == b[1] and a[3] == b[3]
        with torch.no_grad():
            ya, yb = a[2](x * a[3]), b[2](x * b[3])
        assert torch.equal(ya, yb)
    assert len({fuzz_schema.draw(random.Random(n))[1] for n in SEEDS}) > len(SEEDS) // 2


def test_each_drawn_program_runs_in_torch():
    for n in SEEDS:
        model, drawn = fuzz_drifts.program(n, "schema")
        assert drawn["pool"] == "schema" and drawn["call"].startswith("aten.")
        with torch.no_grad():
            y = model(fuzz_drifts.rows())
        assert y.shape == (6, 8 if n % 2 == 0 else 32) and torch.isfinite(y).all()
        assert getattr(fuzz_drifts, f"schema_{n}")()(fuzz_drifts.rows()).shape == y.shape


def test_the_hand_pool_stays_the_default():
    model, drawn = fuzz_drifts.program(41001)
    assert drawn["pool"] == "hand" and not drawn["call"].startswith("aten.")


class _Uninitialised(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.ops.aten.new_empty.default(x, [1])        # memory nobody wrote: NaN when filled


def test_a_program_reading_uninitialised_memory_is_left_out_of_the_screen(tmp_path):
    """The screen's own repeatability check (the 23000 range scored ``new_empty(x > 0, [1])``, garbage read as the
    deterministic fill, as two drifts): such a program is counted, not scored, and the draws stay as they were."""
    x = fuzz_drifts.rows()
    assert not fuzz_drifts.repeatable(_Uninitialised(), x)
    assert fuzz_drifts.repeatable(fuzz_drifts.program(41001, "schema")[0], x)
    path = tmp_path / "u.onnx"
    assert fuzz_drifts._runs(_Uninitialised(), path, [x]) == fuzz_drifts.NOT_REPEATABLE      # before loading a file


def test_told_asks_for_the_called_op_not_an_overload_or_an_argument():
    """The fuzzer's own ``told`` said yes to 26063, whose message named ``aten.reshape.default`` for a call of
    ``aten.type_as.default`` (the overload's ``default`` matched): a schema call names its ATen ops alone."""
    call = "aten.type_as.default(x.abs(), y) |> aten.cosine_similarity.default(x, y, 1, 10000.0)"
    assert not fuzz_drifts._told("the exporter's lowering of aten.reshape.default computes otherwise", call)
    assert not fuzz_drifts._told("the lowering of torch's abs is wrong", call)
    assert fuzz_drifts._told("the lowering of aten.cosine_similarity.default computes otherwise", call)
    assert fuzz_drifts._told("torch's type_as keeps float64", call)
    assert fuzz_drifts._told("torch's __rshift__ of int64", "aten.__rshift__.Scalar(x, 2)")
    assert fuzz_drifts._told("floor_divide of a float", "torch.floor_divide(x, -1.0)")       # the hand pool's text
