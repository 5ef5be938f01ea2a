"""Which call of an outer module a TorchScript node is in: its deepest call's callers in torch's call tree.

TorchScript makes a scope's whole path unique by a suffix on its *last* segment only: a shared layer called
twice (ALBERT's one ``albert_layers.0`` for every layer) names its second call's own nodes
``albert_layers.0_1/Add``, but the nodes of that call's attention ``albert_layers.0/attention_1/...`` and of
the attention's LayerNorm ``albert_layers.0/attention/LayerNorm_1/...``: the outer segments are the first
call's.  Read as instance keys, the second attention lost its LayerNorm (its output was paired with the
residual Add before it: a false DRIFT on a clean file) and the second call of the layer group had no key of
its own.  A node's deepest mapped call is told by its last segment; the calls around it are that call's
callers, so each outer (module, key) of the chain is replaced by the caller's own key.
"""
from __future__ import annotations

from typing import Optional

from drifttui.core.runtime.torch_hooks import Call

CALL_KEY = "#call"


def caller_key(ci: int) -> str:
    return f"{CALL_KEY}{ci}"


def called_from(calls: list[Call], chains: list[list[tuple[str, str]]],
                key_to_call: dict[tuple[str, str], int]) -> bool:
    """Rewrite the outer keys of every chain whose deepest call's callers the keys contradict; True when any
    chain was rewritten (then every chain with a deepest mapped call is keyed by its callers, so a module's
    keys are all of one kind)."""
    if not any(_contradicts(calls, ch, key_to_call) for ch in chains):
        return False
    for ch in chains:
        found = _deepest(ch, key_to_call)
        if found is None:
            continue
        pos, ci = found
        ch[pos] = (ch[pos][0], caller_key(ci))
        p = calls[ci].parent
        for j in range(pos - 1, 0, -1):
            q = _caller_of(calls, p, ch[j][0])
            if q is None:
                break
            ch[j] = (ch[j][0], caller_key(q))
            p = calls[q].parent
    return True


def _deepest(ch: list[tuple[str, str]], key_to_call: dict[tuple[str, str], int]) -> Optional[tuple[int, int]]:
    for pos in range(len(ch) - 1, 0, -1):
        ci = key_to_call.get(ch[pos])
        if ci is not None:
            return pos, ci
    return None


def _caller_of(calls: list[Call], p: Optional[int], module: str) -> Optional[int]:
    """The nearest call of ``module`` at or above call ``p``."""
    while p is not None and calls[p].module != module:
        p = calls[p].parent
    return p


def _contradicts(calls: list[Call], ch: list[tuple[str, str]], key_to_call: dict[tuple[str, str], int]) -> bool:
    found = _deepest(ch, key_to_call)
    if found is None:
        return False
    pos, ci = found
    p = calls[ci].parent
    for j in range(pos - 1, 0, -1):
        q = _caller_of(calls, p, ch[j][0])
        if q is None:
            return False
        if key_to_call.get(ch[j]) != q:
            return True
        p = calls[q].parent
    return False
