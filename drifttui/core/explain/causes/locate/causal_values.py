"""Which of the ONNX values that hold a torch call's value is that call's own (``torch_align``'s found values, the
coincidences dropped): not its input's value when torch's differs (``_own_value``), and not one computed before
the value of an input it reads (``causal``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.explain.causes.locate.align_graph import (computed_by, fed_ops, fed_values, input_values,
                                                             producers)
from drifttui.core.explain.causes.locate.case import Case


def _own_value(ops: list[tuple], out: dict[int, str], others: dict[int, list[str]], k: int) -> bool:
    """Whether call ``k`` keeps a found value in ``out``: one that is not the value of an input of it whose torch value
    differs from its own (``log1p(y)`` of a tiny ``y`` is ``y`` within the tolerance, so the file's ``y`` would vouch
    for the ``Log(1 + y)`` it computes after it); moved to another value that holds it as closely, else dropped.  An
    op torch computes as the identity (a copy, an eval dropout, a clamp that does not bite) keeps its input's value."""
    same = [i for i in input_values(ops, out, k) if out.get(i) == out[k]]
    if not same or all(np.array_equal(ops[k][2], ops[i][2], equal_nan=True) for i in same):
        return True
    taken = {out[i] for i in same}
    moved = next((v for v in others.get(k, []) if v not in taken), None)
    if moved is None:
        del out[k]
        return False
    out[k] = moved
    return True


def _value_nodes(producer: dict[str, Any], value: str) -> list[str]:
    """The outputs of the nodes ``value`` is computed by (each node by the first output it makes)."""
    seen, out, todo = set(), [], [value]
    while todo:
        v = todo.pop()
        n = producer.get(v)
        if n is None or n.name in seen:
            continue
        seen.add(n.name)
        out.append(v)
        todo.extend(n.input)
    return out


def causal(case: Case, ops: list[tuple], found: dict[int, str], others: dict[int, list[str]]) -> dict[int, str]:
    """``found`` where no call's value is computed before the value of an input it reads.  Of two such values one
    equals its call's by coincidence: the input's is moved to another value that holds it as closely and is not
    computed after the call's (a ``round``'s ``Round`` rather than the ``remainder``'s ``Floor`` equal to it); else
    the call's to another that holds it and is computed after its inputs' (a ``reshape`` back to the module's input
    shape holds the input itself, computed before the ``Cast`` of its input's value: the file's own ``Reshape``
    after that Cast holds it too); when none does, the call's is dropped (``argmax(...) * 0.1 + x`` equal to an
    earlier ``x + 0.2`` where every row's index is 2: it would vouch for the calls before it).  An input computed
    from no input of the module (a constant of the forward, ``torch.arange(8)``) contradicts nothing: the exporters
    fold it, and a value equal to it later in the file is a copy or a coincidence (a diagonal lowering's column
    indices).  A one-element value is held only by a value computed from the case's feeds (``_one_element``)."""
    producer, fed = producers(case), fed_ops(ops)
    order = {n.name: k for k, n in enumerate(case.model.graph.node) if n.name}
    out = _one_element(case, ops, found, others, fed)

    def before(a: str, v: str) -> bool:
        """Whether value ``a`` is computed before ``v``: among its nodes, or a feed of the case they read."""
        made = producer.get(a)
        if made is not None:
            return computed_by(producer, order, made.name, v)
        return any(a in producer[n].input for n in _value_nodes(producer, v))
    for k in sorted(found):
        if k not in out or ops[k][0] != "call_function" or not _own_value(ops, out, others, k):
            continue
        if out[k] not in producer and out[k] not in case.feeds:
            continue
        for i in input_values(ops, out, k):
            if out[i] == out[k] or i not in fed or not before(out[k], out[i]):
                continue        # a constant of the forward's value later in the file is a copy or a coincidence
            moved = next((v for v in others.get(i, []) if not before(out[k], v)), None)
            if moved is not None:
                out[i] = moved
                continue
            ins = [out[j] for j in input_values(ops, out, k) if j in fed]
            later = next((v for v in others.get(k, []) if v not in ins and not any(before(v, w) for w in ins)), None)
            if later is None:
                del out[k]
                break
            out[k] = later
    return out


def _one_element(case: Case, ops: list[tuple], found: dict[int, str], others: dict[int, list[str]],
                 fed: set[int]) -> dict[int, str]:
    """``found``, where a call computed from the module's inputs whose value has one element (``any``'s ``True``, a
    sum) is held by a value the case computes from its feeds: one its constants or its sizes alone make (a scalar
    ``1`` a Reshape reads, a batch size) holds it by coincidence.  Moved to another value that holds it, else
    dropped."""
    data = fed_values(case)
    out = dict(found)
    for k in sorted(found):
        val = ops[k][2]
        if k not in fed or ops[k][0] != "call_function" or val is None or np.size(val) != 1 or out[k] in data:
            continue
        moved = next((v for v in others.get(k, []) if v in data), None)
        if moved is None:
            del out[k]
        else:
            out[k] = moved
    return out
