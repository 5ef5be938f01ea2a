"""The ``unattributed`` note names what amplifies rounding noise in layers that fail with no module owning the
error: a precision cast, an integer step (a float -> int conversion, Floor, Round, ArgMax) or a reduction."""
from drifttui.core.decide.unattributed import attribute_unowned
from drifttui.core.result import INHERITED, OK
from drifttui.core.runtime.torch_hooks import Call, TensorRef


def _calls(out_dtype: str) -> list[Call]:
    root = Call(0, "", "M", 0, 0, None, [TensorRef((4,), "float32")], [TensorRef((4,), out_dtype)])
    child = Call(1, "bucket", "Bucket", 0, 1, 0, [TensorRef((4,), "float32")], [TensorRef((4,), out_dtype)])
    return [root, child]


def _why(calls: list[Call], ops: dict[int, list[str]]) -> str:
    statuses = [OK, INHERITED]
    notes = attribute_unowned(calls, None, statuses, None, ops)      # type: ignore[arg-type]
    assert statuses[1] == "unattributed", statuses
    return notes[0]


def test_an_integer_conversion_is_named_as_the_amplifier_not_a_reduction():
    note = _why(_calls("int64"), {1: ["Mul", "Cast"]})
    assert "integer step" in note and "reduction" not in note


def test_a_rounding_op_is_an_integer_step_even_in_float():
    assert "integer step" in _why(_calls("float32"), {1: ["Mul", "Floor"]})


def test_a_reduction_is_still_named_where_nothing_rounds():
    note = _why(_calls("float32"), {1: ["ReduceSum", "Div"]})
    assert "amplified by a reduction" in note and "integer step" not in note


def _lookup_calls(root_in: str) -> list[Call]:
    """a root reading ``root_in``, a body float -> float (its integer conversion inside, functional), and the body's
    Embedding reading the integers the body computed."""
    root = Call(0, "", "M", 0, 0, None, [TensorRef((4,), root_in)], [TensorRef((4,), "float32")])
    body = Call(1, "body", "Seeds", 0, 1, 0, [TensorRef((4,), "float32")], [TensorRef((4,), "float32")])
    emb = Call(2, "body.seeds", "Embedding", 0, 2, 1, [TensorRef((4,), "int64")], [TensorRef((4, 8), "float32")])
    return [root, body, emb]


def _why_all(calls: list[Call], ops: dict[int, list[str]]) -> str:
    statuses = [INHERITED] * len(calls)
    notes = attribute_unowned(calls, None, statuses, None, ops)      # type: ignore[arg-type]
    return notes[0]


def test_a_lookup_by_integers_computed_inside_is_an_integer_step():
    """The body converts to integers with functional code (no call's output is an integer) and an Embedding below it
    reads them: the lookup is the integer step, not the body's ReduceSum; the advice is not to widen a tolerance."""
    note = _why_all(_lookup_calls("float32"), {1: ["Mul", "Cast", "Mod", "Gather", "ReduceSum"], 2: ["Gather"]})
    assert "integer step" in note and "reduction" not in note and "widen the tolerance" not in note


def test_integer_model_inputs_alone_are_no_integer_step():
    """A model reading token ids at its root: the root's integer input is not a step; its reduction is named."""
    calls = _lookup_calls("int64")[:2]
    note = _why_all(calls, {1: ["ReduceSum", "Div"]})
    assert "amplified by a reduction" in note and "integer step" not in note
