"""Which module a TorchScript node's scope names: its ``/``-separated segments resolved against the
model's module tree (children called or not, ``_1`` call suffixes, module names that hold a ``/``)."""
from __future__ import annotations

import re
from typing import Optional

_SUFFIX = re.compile(r"^(.*)_(\d+)$")


def resolve_torchscript(segments: list[str], children: dict[str, list[str]],
                         cache: dict[tuple[str, str], Optional[str]],
                         aliases: Optional[dict[str, str]] = None) -> list[tuple[str, str]]:
    """Raw TorchScript path segments -> [(qualified module, instance key)].

    The segments come from splitting the node name on ``/``; a module whose name holds a ``/``
    (a ModuleDict key such as ``"a/b"``) spans several segments, so a segment that names no
    module is tried joined with the ones after it (the longest join first): names are keys, not
    paths (issue 22).  ``aliases``: a shared module's other names -> its first name (``alike``)."""
    chain: list[tuple[str, str]] = []
    cur = ""
    raw = ""
    i = 0
    while i < len(segments):
        found, used = _segment(cur, segments[i], children, cache, aliases), 1
        for j in range(len(segments), i + 1, -1) if found is None else ():
            found = _segment(cur, "/".join(segments[i:j]), children, cache, aliases)
            if found is not None:
                used = j - i
                break
        if found is None:
            break
        raw = f"{raw}/{'/'.join(segments[i:i + used])}"
        cur = found
        chain.append((cur, raw))
        i += used
    return chain


def _segment(cur: str, seg: str, children: dict[str, list[str]],
             cache: dict[tuple[str, str], Optional[str]], aliases: Optional[dict[str, str]]) -> Optional[str]:
    """The module below ``cur`` named ``seg`` (or ``seg`` without TorchScript's ``_1`` call suffix)."""
    if (cur, seg) not in cache:
        cache[(cur, seg)] = _child(cur, seg, children, aliases)
    found = cache[(cur, seg)]
    if found is None:
        m = _SUFFIX.match(seg)
        if m:
            if (cur, m.group(1)) not in cache:
                cache[(cur, m.group(1))] = _child(cur, m.group(1), children, aliases)
            found = cache[(cur, m.group(1))]
    return found


def _child(cur: str, seg: str, children: dict[str, list[str]],
           aliases: Optional[dict[str, str]]) -> Optional[str]:
    """The module below ``cur`` that TorchScript names ``seg``: a child, or a deeper module when
    the containers between were never called (ModuleList, ModuleDict); the first of several alike
    (``alike``)."""
    found = alike(cur, seg, children, aliases)
    return found[0] if found else None


def alike(cur: str, seg: str, children: dict[str, list[str]],
          aliases: Optional[dict[str, str]] = None) -> list[str]:
    """Every module below ``cur`` that TorchScript would name ``seg``, the shallowest only, in module order.
    Several when the containers that tell them apart were never called (ts_twins.py).

    TorchScript names a module by its first name (``named_modules()`` keeps one name per module object), also
    where it is reached by another: timm's CoaT registers one position encoding as ``cpe1`` and in every block
    of a stage as ``cpe``, and a block's call of it is scoped ``/serial_blocks1.0/cpe1/``.  So a module's other
    name (``aliases``: other name -> first name) is matched by the first name; it is returned as found below
    ``cur`` (the caller maps it to the module, keyed by this path), once per module object."""
    aliases = aliases or {}
    queue = list(children.get(cur, ()))
    found: list[str] = []
    seen: set[str] = set()
    i = 0
    while i < len(queue):
        c = queue[i]
        i += 1
        named = aliases.get(c, c)
        if (named == seg or named.endswith("." + seg)) and named not in seen:
            found.append(c)
            seen.add(named)
        queue.extend(children.get(c, ()))
    depth = min((c.count(".") for c in found), default=0)
    return [c for c in found if c.count(".") == depth]


def in_call_order(keys: list[str]) -> list[str]:
    """One module's TorchScript instance keys (raw scope paths) in the order of its calls: by the call suffix
    of their last segment (``act``, ``act_1``, ``act_2``), not by where the file's nodes first name them, which a
    graph optimiser may have re-sorted (ORT basic computes a UNet's time-embedding SiLU, the second call of a
    ResNet block's ``nonlinearity``, before the first).  ``keys`` as given unless they differ in exactly that
    suffix after one shared path."""
    parts = [k.rsplit("/", 1) for k in keys]
    if len(keys) < 2 or any(len(p) != 2 or p[0] != parts[0][0] for p in parts):
        return keys
    base = min((p[1] for p in parts), key=len)
    order = []
    for k, (_, last) in zip(keys, parts):
        m = re.fullmatch(re.escape(base) + r"_(\d+)", last)
        if last != base and m is None:
            return keys
        order.append((0 if last == base else int(m.group(1)) if m else 0, k))
    return [k for _, k in sorted(order)] if len({n for n, _ in order}) == len(order) else keys
