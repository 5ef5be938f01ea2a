"""When and how a deployed file is mapped through a reference export (plan/transfer.py does the mapping).

A file that onnxsim, onnxslim, ORT's offline optimiser or onnxruntime.transformers' optimizer has
processed lost the exporter's scopes (or most of them).  drifttui then takes the file before the
pipeline (``--reference-onnx``) or exports the model itself with the exporter the file came from,
maps that reference as usual, runs both on sample 0 (optimisations off) and carries the mapping
over (plan/transfer.py).  Three views make the deployed values comparable: values in ORT's blocked
NCHWc layout go through ORT's own ReorderOutput, values in another axis order (a Transpose ORT's
transpose optimiser moved) through the Transpose back to the reference's order, values whose shape
lost or gained 1-dims (a Gemm's flattened batch) through a Reshape.  Values whose marking as an output makes ORT refuse the graph
are found by bisection and left unmarked.
"""
from __future__ import annotations

import re

from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from drifttui.core.onnx.io import copy_model
from drifttui.core.model.export import export_model
from drifttui.core.model.loading import load_onnx
from drifttui.core.onnx import qviews
from drifttui.core.onnx.graph import DYNAMO, TORCHSCRIPT, GraphIndex, build_index
from drifttui.core.onnx import nchwc
from drifttui.core.prepare.plan import matching as plan_matching
from drifttui.core.prepare.plan.activations import one_hop
from drifttui.core.prepare.plan import transfer as plan_transfer
from drifttui.core.prepare.plan.anchors import match_weights, weights_of
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.prepare.reference_check import check_share, weight_share
from drifttui.core.result import FUSED, OK
from drifttui.core.runtime import sessions
from drifttui.errors import ModelError



BLOCKED = " (NCHWc-blocked)"
OWN = "drifttui_"                   # the mark in the names drifttui's graph edits give the nodes they write


_NAMED_AFTER_VALUE = re.compile(r"_output_\d+(_|$)")


def processed_by(index: GraphIndex) -> str:
    """The tool that processed the file, '' for a raw export (as far as the file tells)."""
    m = index.model
    if any(p.key.startswith("onnxsim") for p in m.metadata_props):
        return "onnxsim"
    if m.producer_name and m.producer_name != "pytorch":
        return m.producer_name
    if any(p.key == "onnx.quant.pre_process" for p in m.metadata_props):
        return "ONNX Runtime's quantization pre-processing (quant_pre_process: shape inference, basic optimisation)"
    domains = {n.domain for n in index.nodes}
    if "com.microsoft.nchwc" in domains:
        return "ONNX Runtime (offline optimisation, NCHWc layout)"
    if "com.microsoft" in domains:
        return "ONNX Runtime (contrib ops)"
    # drifttui's own edits (``repair``'s rewrites, named ``<node or value>/drifttui_...``) are no tool's processing:
    # its rounding Cast is named after the value it writes, as ORT names a value after the node it moved
    real = [n for n in index.nodes if n.op_type != "Constant" and OWN not in n.name]
    if index.flavour == TORCHSCRIPT and any(o == n.name for n in real if n.name.startswith("/") for o in n.outputs):
        # the exporter names values "<node>_output_<k>"; ORT's transpose optimiser names the value
        # of a node it moved a Transpose past after the node: that value is in another axis order
        return "ONNX Runtime (offline optimisation: Transposes moved)"
    if index.flavour == TORCHSCRIPT and any(not n.proto.name for n in real):
        # the exporter names every node "/scope/Op"; ORT's function inlining (HardSwish into HardSigmoid
        # and Mul at ENABLE_BASIC) leaves its nodes nameless, without a scope to map them by
        return "ONNX Runtime (offline optimisation: functions inlined)"
    if index.flavour == TORCHSCRIPT and _linear_took_a_value(index, real):
        # a Conv / Gemm / MatMul of the exporter's that outputs the value of a node the file no longer has:
        # that node (a constant Mul or Add after it: ORT's ConvMulFusion, ConvAddFusion) went into its
        # weight, so the value in its scope is not its module's (plan/scale_folds.py decides by content)
        return "ONNX Runtime (offline optimisation: a constant folded into the node before it)"
    if index.flavour == TORCHSCRIPT and any(_NAMED_AFTER_VALUE.search(n.name.rsplit("/", 1)[-1])
                                            for n in real if n.name.startswith("/")):
        # the exporter names a node "/scope/Op[_k]" and its values "<node>_output_<k>": a node named after
        # a value replaced the exporter's nodes (onnxslim's MatMul + Add -> Reshape, Gemm, Reshape, the
        # last merged with the next Reshape: the Linear's own value is gone, only its flattened Gemm is left)
        return "a graph optimiser (nodes named after the values they replaced: onnxslim)"
    if index.flavour == DYNAMO:
        scoped = sum(1 for n in real if not n.scope_filled)
        if real and scoped < 0.5 * len(real):
            return "a graph optimiser (most of the exporter's metadata is gone)"
    if index.flavour not in (DYNAMO, TORCHSCRIPT):
        return "a tool that dropped the exporter's metadata"
    return ""


_EXPORTER_VALUE = re.compile(r"^(/.*)_output_\d+$")
_LINEAR = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def _linear_took_a_value(index: GraphIndex, real: list[Any]) -> bool:
    """A linear node named by the exporter ("/scope/Op") whose output the exporter named after another
    node ("<node>_output_<k>") that the file no longer has: an optimiser removed that node and gave its
    value to the linear one."""
    names = {n.name for n in real}
    for n in real:
        if n.op_type not in _LINEAR or not n.name.startswith("/"):
            continue
        for o in n.outputs:
            m = _EXPORTER_VALUE.match(o or "")
            if m and m.group(1) != n.name and m.group(1) not in names:
                return True
    return False


def file_exporter(index: GraphIndex, default: str) -> str:
    """The exporter that wrote the file before it was processed: from node and value names."""
    names = [n.name for n in index.nodes]
    if sum(1 for n in names if n.startswith("/")) >= max(1, len(names) // 3):
        return "torchscript"
    if sum(1 for n in names if n.startswith("node_")) >= max(1, len(names) // 3):
        return "dynamo"
    return default if default in ("dynamo", "torchscript") else "dynamo"


def run_exporter(index: GraphIndex, cfg: Any) -> str:
    """The exporter behind the run's graph: the one that wrote a given file (``file_exporter``), else the one
    drifttui exported with."""
    return file_exporter(index, cfg.exporter) if cfg.onnx else cfg.exporter


def markable_run(index: GraphIndex, values: list[str], feeds: dict, provider: str, workdir: Path,
                 level: str = "disable") -> tuple[dict[str, np.ndarray], list[str]]:
    """Sample-0 values of ``values``; those whose marking as an output makes ORT refuse the graph
    are found by bisection and left out (returned second)."""
    def load(vals: list[str]) -> Any:
        return sessions.make_session(index.model, level, False, provider, workdir, "marked.onnx", extra_outputs=vals,
                                     data_dir=index.data_dir, prepack=False, types=index.elem_types)

    try:
        return sessions.run(load(values), feeds, values), []
    except ModelError:
        load([])      # the plain graph fails too: that is the file's own error, raised as it is
    bad: list[str] = []

    def bisect(vals: list[str]) -> None:
        try:
            load(vals)
            return
        except ModelError:
            pass
        if len(vals) == 1:
            bad.extend(vals)
            return
        bisect(vals[:len(vals) // 2])
        bisect(vals[len(vals) // 2:])
    bisect(values)
    good = [v for v in values if v not in set(bad)]
    return sessions.run(load(good), feeds, good), bad


def loads(model: Any, provider: str, workdir: Path, data_dir: Optional[Path] = None) -> str:
    """'' when ONNX Runtime loads ``model`` (optimisations off), else its one-line reason."""
    try:
        sessions.make_session(model, "disable", False, provider, workdir, "local-check.onnx", data_dir=data_dir,
                              prepack=False)
    except ModelError as exc:
        return exc.problem[:200]
    return ""


def insert_views(model: Any, after: dict[str, list[Any]], rewire: dict[str, str]) -> None:
    """Put ``after[v]``'s nodes right after the node producing ``v`` and make every other reader of
    ``v`` read ``rewire[v]`` instead (in place).  A view is a round trip (``v`` -> comparable view ->
    back to ``v``'s layout): the mapped value is the view, so the local run cuts there and feeds the
    PyTorch value to the readers through the way back, as it feeds any other module boundary."""
    nodes = list(model.graph.node)
    del model.graph.node[:]
    for n in nodes:
        for k, v in enumerate(n.input):
            if v in rewire:
                n.input[k] = rewire[v]
        model.graph.node.append(n)
        for o in n.output:
            model.graph.node.extend(after.get(o, []))


def unblock_nchwc(index: GraphIndex, shapes: dict[str, tuple]) -> tuple[Any, dict[str, str], list[str]]:
    """A copy of the model in which every value stored in ORT's blocked NCHWc layout (onnx/nchwc.py:
    the NCHWc ops' outputs and the default-domain ops' inside a blocked region) goes through
    ReorderOutput (ORT's own inverse), with the channel count the graph states, so that it can be
    compared in NCHW, and back through ReorderInput to its readers; and the blocked values that
    cannot be read so (not comparable: never compared raw)."""
    import onnx

    views, left = nchwc.reorder_plan(index, shapes)
    if not views:
        return index.model, {}, left
    model = copy_model(index.model)
    made: dict[str, str] = {}
    after: dict[str, list[Any]] = {}
    for k, (v, channels) in enumerate(views.items()):
        out = f"{v}::nchw"
        after[v] = [onnx.helper.make_node("ReorderOutput", [v], [out], name=f"drifttui_nchw_{k}",
                                          domain=nchwc.NCHWC, channels=channels, channels_last=0),
                    onnx.helper.make_node("ReorderInput", [out], [f"{v}::nchwc"], name=f"drifttui_nchwc_{k}",
                                          domain=nchwc.NCHWC, channels_last=0)]
        made[out] = v
    insert_views(model, after, {v: f"{v}::nchwc" for v in views})
    return model, made, left


def _transpose_views(index: GraphIndex, tr: Any, dep_vals: dict) -> GraphIndex:
    """Matches in another axis order than the reference's (ORT's transpose optimiser moved a
    Transpose past them) are read through a Transpose to the reference's order, so that they compare
    element by element (never raw), and transposed back for their readers."""
    import onnx

    moved = {r: m for r, m in tr.matches.items() if m.perm is not None}
    if not moved:
        return index
    model = copy_model(index.model)
    views: dict[tuple, str] = {}
    after: dict[str, list[Any]] = {}
    rewire: dict[str, str] = {}
    for r, m in sorted(moved.items()):
        key = (m.value, tuple(m.perm))
        if key not in views:
            k = len(views)
            out = f"{m.value}::perm{''.join(str(p) for p in m.perm)}"
            nodes = [onnx.helper.make_node("Transpose", [m.value], [out], name=f"drifttui_perm_{k}",
                                           perm=list(m.perm))]
            if m.value not in rewire:      # one way back per value: its readers read it
                rewire[m.value] = f"{m.value}::unperm"
                nodes.append(onnx.helper.make_node("Transpose", [out], [rewire[m.value]], name=f"drifttui_unperm_{k}",
                                                   perm=[int(i) for i in np.argsort(m.perm)]))
            after.setdefault(m.value, []).extend(nodes)
            views[key] = out
            dep_vals[out] = np.transpose(dep_vals[m.value], m.perm)
        m.value = views[key]
    insert_views(model, after, rewire)
    return build_index(model, index.path)


def _reshape_views(index: GraphIndex, tr: Any, ref_vals: dict, dep_vals: dict) -> tuple[GraphIndex, Any]:
    """Matches whose deployed shape differs from the reference's only by 1-dims are read through a
    Reshape to the reference's shape (dim 0 left free for --batch), so that they compare element by
    element, and reshaped back for their readers."""
    import onnx

    odd = {r: m for r, m in tr.matches.items() if tuple(dep_vals[m.value].shape) != tuple(ref_vals[r].shape)}
    if not odd:
        return index, tr
    model = copy_model(index.model)
    views: dict[tuple, str] = {}
    after: dict[str, list[Any]] = {}
    rewire: dict[str, str] = {}
    for r, m in sorted(odd.items()):
        shape = list(ref_vals[r].shape)
        key = (m.value, tuple(shape))
        if key not in views:
            k = len(views)
            target = ([-1] + shape[1:]) if shape and shape[0] == 1 else shape
            back = [-1] + [int(d) for d in dep_vals[m.value].shape[1:]]
            model.graph.initializer.extend([
                onnx.numpy_helper.from_array(np.array(target, dtype=np.int64), f"drifttui_shape_{k}"),
                onnx.numpy_helper.from_array(np.array(back, dtype=np.int64), f"drifttui_back_{k}")])
            out = f"{m.value}::as{'x'.join(str(d) for d in shape)}"
            nodes = [onnx.helper.make_node("Reshape", [m.value, f"drifttui_shape_{k}"], [out],
                                           name=f"drifttui_view_{k}")]
            if m.value not in rewire:      # one way back per value: its readers read it
                rewire[m.value] = f"{m.value}::back"
                nodes.append(onnx.helper.make_node("Reshape", [out, f"drifttui_back_{k}"], [rewire[m.value]],
                                                   name=f"drifttui_back_{k}"))
            after.setdefault(m.value, []).extend(nodes)
            views[key] = out
        m.value = views[key]
    insert_views(model, after, rewire)
    return build_index(model, index.path), tr


# (reference index, its plan, its sample-0 feeds) -> the two with a round trip per output absorbed into a reader
Split = Callable[[GraphIndex, Plan, dict], tuple[GraphIndex, Plan]]


def transfer(cfg: Any, model: Any, sample0: Any, feeds0: dict, index: GraphIndex, calls: list, workdir: Path,
             map_index: Callable[[GraphIndex], Plan], notes: Optional[list[str]] = None,
             split: Optional[Split] = None) -> Optional[tuple[GraphIndex, Plan, str, str]]:
    """(index, plan, note, exporter) mapped through a reference export; None for a raw export.
    A ``--reference-onnx`` that matches none of the file's weights is an InputError; one that
    matches part of them adds its alert to ``notes`` (reference_check.py)."""
    given = getattr(cfg, "reference_onnx", None)
    tool = processed_by(index) if cfg.onnx else ""       # drifttui's own export is a raw one
    if not given and not tool:
        return None
    exporter = file_exporter(index, cfg.exporter)
    if given:
        (ref_proto, ref_path), source = load_onnx(Path(given), workdir), f"--reference-onnx {Path(given).name}"
    else:
        try:
            path = export_model(model, sample0[0], sample0[1], exporter, workdir, name="reference.onnx")
        except ModelError:
            return None     # no reference: the file is mapped as it is (the coverage says how far)
        (ref_proto, ref_path), source = load_onnx(path, workdir), f"drifttui's own {exporter} export"
    ref = build_index(ref_proto, ref_path)
    original, weights = index, None
    if given:       # before any run: a reference of another model must not map the file to nothing
        d_arr = weights_of(index)
        weights = match_weights(ref, index, d_arr)
        # a weight only ORT's blocked NCHWc ops read is stored reordered (ReorderWeights): not comparable
        # by content, so it neither counts for nor against the reference
        comparable = {n: a for n, a in d_arr.items() if not _blocked_only(index, n)}
        alert = check_share(weight_share(weights[0], weights[2], comparable), given, cfg.onnx)
        if alert and notes is not None:
            notes.append(alert)
    ref_plan = map_index(ref)
    if not ref_plan.localized:
        return None
    if split is not None:       # the reference's outputs absorbed into a reader, as a raw export's (absorbed.py)
        ref, ref_plan = split(ref, ref_plan, _reference_feeds(ref, feeds0))
    wanted = [v for v, e in ref_plan.table.items() if e[0] != "graph_in"]
    after = one_hop(ref, wanted)     # the values a fused activation carries instead
    ref_vals, _ = markable_run(ref, wanted + after, _reference_feeds(ref, feeds0), cfg.provider, workdir)
    index, dep_vals, bad = _deployed_values(index, feeds0, cfg.provider, workdir)
    tr = plan_matching.transfer_values(ref, index, wanted, ref_vals, dep_vals,
                                       weights if index is original else None)
    index = _transpose_views(index, tr, dep_vals)
    index, tr = _reshape_views(index, tr, ref_vals, dep_vals)
    plan = plan_transfer.build_transferred_plan(index, calls, ref_plan, tr, ref)
    note = _note(tool or "a deployment tool", source, calls, plan, ref_plan, tr, bad)
    return index, plan, note, f"{exporter} (mapped through a reference export)"


def _reference_feeds(ref: GraphIndex, feeds0: dict) -> dict:
    """The deployed file's sample-0 feeds for the reference export, in the reference's input types:
    a float16 file's inputs (converted without keep_io_types) widened to the export's float32, exactly
    (the sample was rounded through float16 for both models: model/half_inputs.py)."""
    out = {}
    for name, arr in zip(ref.graph_inputs, feeds0.values()):
        want = ref.elem_types.get(name)
        out[name] = arr.astype(np.float32) if want == 1 and arr.dtype == np.float16 else arr
    return out


def dequantize(index: GraphIndex) -> tuple[Any, dict[str, str]]:
    """A copy of the model with QOperator activations read through DequantizeLinear (qviews.py)."""
    after, rewire, made = qviews.dequantize_views(index)
    if not made:
        return index.model, {}
    model = copy_model(index.model)
    insert_views(model, after, rewire)
    return model, made


def _deployed_values(index: GraphIndex, feeds0: dict, provider: str,
                     workdir: Path) -> tuple[GraphIndex, dict[str, np.ndarray], list[str]]:
    """Sample 0's every value of the deployed graph, blocked NCHWc values read through ReorderOutput,
    quantized activations of a QOperator file through DequantizeLinear."""
    dequantized, made_q = dequantize(index)
    if made_q:
        index = build_index(dequantized, index.path)
    values = [o for n in index.nodes for o in n.outputs if o and not index.is_static(o)]
    dep_vals, bad = markable_run(index, values, feeds0, provider, workdir)
    for view, quantized in made_q.items():      # the integers are never compared, their views are
        dep_vals.pop(quantized, None)
        dep_vals.pop(f"{quantized}::q", None)
    unblocked, made, left = unblock_nchwc(index, {v: a.shape for v, a in dep_vals.items()})
    for v in left:        # blocked, and the graph states no channel count to read it back with
        dep_vals.pop(v, None)
    bad += [f"{v}{BLOCKED}" for v in left]
    if made:
        index = build_index(unblocked, index.path)
        more, bad_views = markable_run(index, list(made), feeds0, provider, workdir)
        dep_vals.update(more)
        bad += bad_views
        for view, blocked in made.items():
            dep_vals.pop(blocked, None)
    return index, dep_vals, bad


def _covered(plan: Any) -> int:
    return sum(1 for cm in plan.calls if cm.status in (OK, FUSED) and (cm.outputs or cm.status == FUSED))


def _note(tool: str, source: str, calls: list, plan: Any, ref_plan: Any, tr: Any, bad: list[str]) -> str:
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(tr.how.items()))
    processed = f"processed by {tool}; " if tool else ""
    out = (f"mapping: {processed}mapped through a reference export ({source}), by structure and sample-0 "
           f"numerics, not by name: {_covered(plan)} of {len(calls)} module calls mapped or fused "
           f"(the reference: {_covered(ref_plan)}); weights matched by content: {kinds or 'none'}")
    blocked = [b.removesuffix(BLOCKED) for b in bad if b.endswith(BLOCKED)]
    bad = [b for b in bad if not b.endswith(BLOCKED)]
    if blocked:
        out += (f"; {len(blocked)} value(s) in ONNX Runtime's blocked NCHWc layout whose channel count the graph "
                f"does not state are not comparable and were left out: {', '.join(blocked[:5])}")
    if bad:
        out += (f"; {len(bad)} value(s) cannot be marked as ONNX outputs without ONNX Runtime refusing the "
                f"graph and were left unmarked: {', '.join(bad[:5])}")
    return out


def _blocked_only(index: GraphIndex, name: str) -> bool:
    """Whether only ORT's NCHWc ops read ``name`` (a weight stored in their blocked layout)."""
    readers = index.consumers.get(name, [])
    return bool(readers) and all(index.nodes[k].domain == nchwc.NCHWC for k in readers)
