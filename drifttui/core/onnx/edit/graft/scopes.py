"""The module scopes of grafted nodes in a dynamo file: the re-export's own scopes re-rooted under the origin's.

A re-export of the origin module carries its children's scopes relative to itself (dynamo:
``name_scopes = ['', 'q_proj', 'linear']``; TorchScript: node names ``/q_proj/MatMul``; under the wrapper of a
module called with keyword arguments, one more level, ``inner``).  Giving every grafted node the anchor's scope
(the origin's own) left the children without nodes of their own, and the repaired file's per-layer comparison
paired a child (``q_proj``) with the origin's output: a repaired file whose outputs match torch was called a
drift.  Here each grafted node gets the anchor's path to the origin, then its own path below it: in a dynamo
file its ``name_scopes``, in a TorchScript file its name (``/body/`` + ``lin/`` + the node's: ``torchscript_scope``;
the anchor may be a child's node, ``/body/lin/MatMul/MatMulAddFusion`` in a file ORT optimised, whose path
named the grafted bias ``body.lin``'s and the repaired file's ``body.lin`` drift).
"""
from __future__ import annotations

import ast
import re
from typing import Any, Optional

SCOPES = "pkg.torch.onnx.name_scopes"
_CALL = re.compile(r"^(.*)_(\d+)$")


def _scopes(node: Any) -> Optional[list[str]]:
    for p in node.metadata_props:
        if p.key == SCOPES:
            try:
                got = ast.literal_eval(p.value)
            except (ValueError, SyntaxError):
                return None
            return [str(s) for s in got] if isinstance(got, list) else None
    return None


def _relative(node: Any, root: str) -> list[str]:
    """The node's module path inside the re-export, as dotted names below its root module (``root``: the
    attribute holding the module inside a wrapper, or "")."""
    own = _scopes(node)
    if own is not None:
        path = own[1:-1]
    elif node.name.startswith("/"):
        parts = node.name.split("/")[1:-1]
        path = [".".join(parts[:k + 1]) for k in range(len(parts))]
    else:
        path = []
    if root:
        path = [p[len(root) + 1:] for p in path if p.startswith(root + ".")]
    return path


def below(node: Any, root: str) -> tuple[list[str], str]:
    """What ``node`` says of its place in the re-export, read before the graft renames it: its module path
    below the origin (``_relative``) and its own last scope entry (an FX node name, or the op type)."""
    own = _scopes(node)
    return _relative(node, root), (own[-1] if own else node.op_type)


def rerooted(where: tuple[list[str], str], anchor_scopes: list[str], module: str = "") -> list[str]:
    """The name_scopes in the file: the anchor's path to the origin ``module`` (the anchor may be a child's
    node), the path below it, the last entry."""
    base = anchor_scopes[:-1]
    if module in base:
        base = base[:base.index(module) + 1]
    origin = base[-1] if len(base) > 1 else ""
    path, last = where
    return base + [f"{origin}.{p}" if origin else p for p in path] + [last]


def _names(segment: str, module: str) -> bool:
    """A TorchScript name segment names ``module`` (its qualified name or its last names; ``_1``: a later call)."""
    m = _CALL.match(segment)
    for seg in (segment, m.group(1) if m else None):
        if seg and (module == seg or module.endswith("." + seg)):
            return True
    return False


def torchscript_scope(anchor_name: str, module: str, where: tuple[list[str], str]) -> Optional[str]:
    """The name prefix of a node grafted into a TorchScript file: the anchor's name up to the segment that names
    the origin ``module``, then the node's own path below it, one segment per level (each level's last dotted
    name, as TorchScript names them); None when the anchor's name does not name the module (or none is given:
    the graft keeps the anchor's scope path)."""
    if not anchor_name.startswith("/") or not module:
        return None
    segments = anchor_name.split("/")[1:-1]
    k = next((i for i, seg in enumerate(segments) if _names(seg, module)), None)
    if k is None:
        return None
    base = "/" + "/".join(segments[:k + 1]) + "/"
    path, prev = where[0], ""
    own = []
    for p in path:
        own.append(p[len(prev) + 1:] if prev and p.startswith(prev + ".") else p)
        prev = p
    return base + "".join(f"{seg}/" for seg in own)


def set_scopes(node: Any, anchor: Any, where: tuple[list[str], str], module: str = "") -> None:
    """Give ``node`` (already carrying the anchor's metadata) its re-rooted name_scopes when the anchor has
    them (a dynamo file); a TorchScript file keeps its names."""
    anchor_scopes = _scopes(anchor)
    if anchor_scopes is None:
        return
    value = repr(rerooted(where, anchor_scopes, module))
    for p in node.metadata_props:
        if p.key == SCOPES:
            p.value = value
