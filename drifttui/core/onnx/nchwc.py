"""ORT's blocked NCHWc layout in a file its offline optimiser saved at ENABLE_ALL.

ORT's NchwcTransformer puts Convs, pools and the element-wise ops between them (Add, Relu, a Gelu...)
in a blocked region: a ReorderInput enters it, a ReorderOutput (with the logical channel count as its
``channels`` attribute) leaves it.  Every value inside is stored blocked, with its channels padded
to the block size (8 on AVX2, 16 on AVX-512: the CPU that saved the file, never assumed here), also
the values of default-domain nodes (a ``Gelu`` between two NCHWc Convs).  Compared raw, such a value
is a false drift; each is read through a ReorderOutput with the channel count the region's own
ReorderOutput states (the element-wise ops and pools of a region keep the channel count; a Conv
changes it), or, where the graph states none, with its blocked channel count (``reorder_plan``).
"""
from __future__ import annotations

from typing import Any, Optional

NCHWC = "com.microsoft.nchwc"
CHANNEL_CHANGING = {"Conv", "Concat"}      # ops whose output channels are not their input's


def blocked_values(index: Any) -> list[str]:
    """Every value stored blocked: the outputs of the NCHWc ops but ReorderOutput, and of every node
    reading a blocked value that is not itself a ReorderOutput (the default-domain ops inside a
    region), in graph order."""
    blocked: set[str] = set()
    out: list[str] = []
    for n in index.nodes:        # a saved file is topologically sorted
        if n.domain == NCHWC:
            inside = n.op_type != "ReorderOutput"
        else:
            inside = any(v in blocked for v in n.inputs if v)
        if inside:
            for o in n.outputs:
                if o and o not in blocked:
                    blocked.add(o)
                    out.append(o)
    return out


def logical_channels(index: Any, value: str, blocked: set[str]) -> Optional[int]:
    """The channel count of ``value`` as the graph states it: the ``channels`` of the ReorderOutput
    its region's channel-preserving ops lead to (forward, never through a Conv), else None."""
    seen = {value}
    todo = [value]
    while todo:
        v = todo.pop()
        for c in index.consumers.get(v, []):
            node = index.nodes[c]
            if node.domain == NCHWC and node.op_type == "ReorderOutput":
                ch = next((a.i for a in node.proto.attribute if a.name == "channels"), 0)
                if ch > 0:
                    return int(ch)
                continue
            if node.op_type in CHANNEL_CHANGING:
                continue
            for o in node.outputs:
                if o in blocked and o not in seen:
                    seen.add(o)
                    todo.append(o)
    return _entry_channels(index, value, blocked)


def _entry_channels(index: Any, value: str, blocked: set[str]) -> Optional[int]:
    """Backward: the channel count of the NCHW value a ReorderInput blocked, through the
    channel-preserving ops between it and ``value``."""
    v, hops = value, 0
    while v in blocked and hops < 64:
        p = index.producer.get(v)
        if p is None:
            return None
        node = index.nodes[p]
        if node.domain == NCHWC and node.op_type == "ReorderInput":
            dims = index.shapes.get(node.inputs[0], [])
            last = any(a.name == "channels_last" and a.i for a in node.proto.attribute)
            c = dims[3 if last else 1] if len(dims) == 4 else None
            return int(c) if isinstance(c, int) and c > 0 else None
        if node.op_type in CHANNEL_CHANGING:
            return None
        v = next((i for i in node.inputs if i in blocked), "")
        hops += 1
    return None


def reorder_plan(index: Any, shapes: dict[str, tuple]) -> tuple[dict[str, int], list[str]]:
    """({blocked 4-D value: the channel count to read it back with}, [blocked values that are not
    comparable]).  A value whose logical channel count the graph does not state (a Conv's output
    read by the next Conv only: ORT pads a Conv's weight to the block size too) is read with its
    blocked channel count: exact when the count is a multiple of the block, and otherwise of another
    shape than the reference's, so never matched (not comparable, never compared raw)."""
    vals = blocked_values(index)
    bset = set(vals)
    views: dict[str, int] = {}
    left: list[str] = []
    for v in vals:
        if v not in shapes:
            continue            # never marked (static, or not computed): nothing to compare
        if len(shapes[v]) != 4:
            left.append(v)
            continue
        ch = logical_channels(index, v, bset)
        ch = ch if ch is not None and ch <= int(shapes[v][1]) else int(shapes[v][1])
        if ch % 4:                  # ORT's ReorderInput (the way back to the readers) takes multiples of 4 only
            left.append(v)
            continue
        views[v] = ch
    return views, left


def blocked_weight(index: Any, name: str) -> bool:
    """Whether only NCHWc Convs read ``name`` as their weight: ORT stored it reordered (ReorderWeights)."""
    readers = index.consumers.get(name, [])
    return bool(readers) and all(index.nodes[k].domain == NCHWC and index.nodes[k].op_type == "Conv"
                                 and index.nodes[k].inputs[1:2] == [name] for k in readers)


def weight_views(a: Any) -> list[Any]:
    """A blocked Conv weight read back in OIHW, one view per layout ORT may have stored it in (the
    block is the saving CPU's: 8 on AVX2, 16 on AVX-512, never assumed): OIHWBiBo (input channels
    blocked too) and OIHWBo (a depthwise Conv, or one reading an NCHW input).  Padded channels are
    kept: a view is the reference's weight only when their counts are the block's multiples."""
    if a.ndim != 4:
        return []
    o, i, h, w = a.shape
    views = []
    for b in (8, 16):
        if o % b:
            continue
        if i % b == 0:
            views.append(a.reshape(o // b, i // b, h, w, b, b).transpose(0, 5, 1, 4, 2, 3).reshape(o, i, h, w))
        views.append(a.reshape(o // b, i, h, w, b).transpose(0, 4, 1, 2, 3).reshape(o, i, h, w))
    return views
