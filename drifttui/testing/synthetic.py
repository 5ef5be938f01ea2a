"""Deterministic synthetic :class:`Result` objects, for tests, benchmarks and fake engines.

``synthetic_result(n_layers=200)`` builds a realistic nested module tree
(root > stages > blocks > leaves) in execution order, with fused / not exported /
unmapped modules, per-layer metrics, ONNX nodes, initializers and parameters, an
injected drift at one leaf (the origin) whose error is inherited downstream, and
optionally the six debugging steps and some findings.  Pure python: no torch, no
numpy, no clock; the same arguments always give the same Result.
"""
from __future__ import annotations

import math
import random
from typing import Optional

from drifttui.core.result import (
    DRIFT, FUSED, HIST_EDGES, INHERITED, NOT_EXPORTED, OK, SCHEMA_VERSION, UNMAPPED,
    Config, Coverage, Environment, Finding, InitializerInfo, Layer, Metrics, NodeInfo,
    STEP_TITLES, Origin, Output, ParamInfo, Result, Step, Summary, Tolerance,
)

__all__ = ["synthetic_result", "synthetic_step", "STEP_TITLES", "FROZEN_TIMINGS"]


FROZEN_TIMINGS = {"load": 0.21, "export": 1.42, "torch": 0.65, "ort": 0.71, "metrics": 0.33, "total": 3.32}

# (name, class, op types, kind) for the leaves of one block, in call order
_LEAVES = (
    ("conv1", "Conv2d", (), "fused"),
    ("bn1", "BatchNorm2d", ("Conv",), "conv"),
    ("relu", "ReLU", ("Relu",), "act"),
    ("conv2", "Conv2d", (), "fused"),
    ("bn2", "BatchNorm2d", ("Conv",), "conv"),
    ("attn", "SelfAttention", ("MatMul", "Add", "Softmax", "MatMul", "Transpose"), "attn"),
    ("drop", "Dropout", (), "dropout"),
)


def _n_bins() -> int:
    return len(HIST_EDGES) + 1


def _bin_of(value: float) -> int:
    if value <= 0:
        return 0
    lg = math.log10(value)
    b = 0
    for edge in HIST_EDGES:
        if lg >= edge:
            b += 1
    return b


def _metrics(rng: random.Random, worst: float, samples: int, scale: float) -> Metrics:
    per_sample = [worst * rng.uniform(0.15, 1.0) for _ in range(samples - 1)] + [worst]
    rng.shuffle(per_sample)
    worst_sample = per_sample.index(worst)
    median = sorted(per_sample)[len(per_sample) // 2]
    hist = [0] * _n_bins()
    for v in per_sample:
        hist[_bin_of(v)] += 1
    cos_worst = max(0.0, 1.0 - (worst / scale) ** 2 * 0.5)
    cos_median = max(0.0, 1.0 - (median / scale) ** 2 * 0.5)
    frac = min(1.0, worst / (scale * 1e-2)) * 0.1 if worst > 1e-4 * scale else 0.0

    def s(w: float, m: float) -> Summary:
        return Summary(float(f"{w:.6g}"), worst_sample, float(f"{m:.6g}"))

    return Metrics(
        max_abs=s(worst, median),
        mean_abs=s(worst * 0.08, median * 0.08),
        max_rel=s(worst / scale, median / scale),
        rmse=s(worst * 0.12, median * 0.12),
        cosine=s(cos_worst, cos_median),
        frac_out=s(frac, frac / 2),
        nan_mismatch=0,
        samples=samples,
        histogram=tuple(hist),
    )


def _passes(m: Optional[Metrics], tol: Tolerance, scale: float) -> bool:
    return m is None or m.max_abs.worst <= tol.atol + tol.rtol * scale


def _init(rng: random.Random, name: str, dims: list[int], param: Optional[str], diff: Optional[float],
          dtype: str = "float32") -> InitializerInfo:
    std = round(rng.uniform(0.01, 0.2), 5)
    mean = round(rng.uniform(-0.01, 0.01), 6)
    return InitializerInfo(name=name, dtype=dtype, dims=dims, min=round(mean - 4 * std, 5),
                           max=round(mean + 4 * std, 5), mean=mean, std=std,
                           torch_param=param, torch_max_abs_diff=diff)


def _leaf_detail(rng: random.Random, module: str, kind: str, ops: tuple[str, ...], ch: int,
                 shape: list[int], value: str, bf16: bool):
    """ONNX nodes, initializers and params of one leaf."""
    scope = "/" + module.replace(".", "/")
    nodes: list[NodeInfo] = []
    inits: list[InitializerInfo] = []
    params: list[ParamInfo] = []
    inp = f"{value}_in"
    diff = 3.9e-3 if bf16 else 0.0
    if kind == "conv":
        conv = module.rsplit(".", 1)[0] + ".conv" + module[-1]
        w, b = f"{conv}.weight_fused", f"{conv}.bias_fused"
        nodes.append(NodeInfo(f"{scope}/Conv", "Conv", "", {"kernel_shape": [3, 3], "strides": [1, 1],
                              "pads": [1, 1, 1, 1], "group": 1, "dilations": [1, 1]},
                              [inp, w, b], [value], {inp: shape, w: [ch, ch, 3, 3], b: [ch], value: shape}))
        inits += [_init(rng, w, [ch, ch, 3, 3], f"{conv}.weight", diff),
                  _init(rng, b, [ch], f"{module}.bias", None)]
        params += [ParamInfo(f"{module}.weight", "parameter", [ch], "float32"),
                   ParamInfo(f"{module}.bias", "parameter", [ch], "float32"),
                   ParamInfo(f"{module}.running_mean", "buffer", [ch], "float32"),
                   ParamInfo(f"{module}.running_var", "buffer", [ch], "float32"),
                   ParamInfo(f"{module}.num_batches_tracked", "buffer", [], "int64")]
    elif kind == "fused":
        params += [ParamInfo(f"{module}.weight", "parameter", [ch, ch, 3, 3], "bfloat16" if bf16 else "float32")]
    elif kind == "act":
        nodes.append(NodeInfo(f"{scope}/Relu", "Relu", "", {}, [inp], [value], {inp: shape, value: shape}))
    elif kind == "attn":
        t = [shape[0], shape[2] * shape[3], ch]
        prev = inp
        for i, op in enumerate(ops):
            out = value if i == len(ops) - 1 else f"{value}_{op.lower()}_{i}"
            ins = [prev]
            if op == "MatMul":
                wname = f"{module}.{'qkv' if i == 0 else 'out'}_proj.weight"
                ins.append(wname)
            attrs = {"axis": -1} if op == "Softmax" else ({"perm": [0, 2, 1]} if op == "Transpose" else {})
            nodes.append(NodeInfo(f"{scope}/{op}_{i}", op, "", attrs, ins, [out], {prev: t, out: t}))
            prev = out
        for proj in ("q", "k", "v", "out"):
            inits.append(_init(rng, f"{module}.{proj}_proj.weight", [ch, ch], f"{module}.{proj}_proj.weight", 0.0))
            inits.append(_init(rng, f"{module}.{proj}_proj.bias", [ch], f"{module}.{proj}_proj.bias", 0.0))
            params.append(ParamInfo(f"{module}.{proj}_proj.weight", "parameter", [ch, ch], "float32"))
            params.append(ParamInfo(f"{module}.{proj}_proj.bias", "parameter", [ch], "float32"))
        inits.append(_init(rng, f"{module}.scale", [], None, None))
    return nodes, inits, params


def synthetic_result(n_layers: int = 200, origin: Optional[int] = None, seed: int = 0, *,
                     drift: bool = True, samples: int = 20, config: Optional[Config] = None,
                     error_scale: float = 1.0, steps: bool = True, findings: bool = True) -> Result:
    """A deterministic Result with ``n_layers`` module calls.

    ``origin`` is the layer index where the drift is injected (default: the first
    fused-BatchNorm leaf about 40% of the way through); ``drift=False`` injects none.
    ``config`` (tolerance, samples...) is echoed; ``error_scale`` scales every error
    (a fake engine can use it to mimic determinism or zero input).
    """
    n_layers = max(1, int(n_layers))
    rng = random.Random(seed)
    config = config or Config(model="synthetic:net", example="synthetic", samples=samples)
    samples = config.samples or samples
    tol = Tolerance(atol=config.atol, rtol=config.rtol)

    # -- the tree, in pre-order -------------------------------------------------
    plan: list[tuple[str, str, int, Optional[int], tuple[str, ...], str]] = [("", "Net", 0, None, (), "root")]
    per_block = 1 + len(_LEAVES)
    n_blocks = max(1, (n_layers - 1) // per_block)
    n_stages = max(1, min(16, round(math.sqrt(n_blocks / 2))))
    blocks_per_stage = max(1, math.ceil(n_blocks / n_stages))
    s = 0
    while len(plan) < n_layers:
        stage = f"stage{s}"
        plan.append((stage, "Stage", 1, 0, (), "stage"))
        stage_idx = len(plan) - 1
        for b in range(blocks_per_stage):
            if len(plan) >= n_layers:
                break
            block = f"{stage}.block{b}"
            plan.append((block, "Block", 2, stage_idx, (), "block"))
            block_idx = len(plan) - 1
            for name, cls, ops, kind in _LEAVES:
                if len(plan) >= n_layers:
                    break
                plan.append((f"{block}.{name}", cls, 3, block_idx, ops, kind))
        s += 1
    plan = plan[:n_layers]

    leaves_conv = [i for i, p in enumerate(plan) if p[5] == "conv"]
    if origin is None and drift and leaves_conv:
        origin = leaves_conv[min(len(leaves_conv) - 1, int(len(leaves_conv) * 0.4))]
    if not drift:
        origin = None
    elif origin is not None:   # snap to the next leaf that has an ONNX value of its own
        mapped = [i for i, p in enumerate(plan) if p[5] in ("conv", "attn") or (p[5] == "act" and i % 11 != 5)]
        origin = next((i for i in mapped if i >= origin), mapped[-1] if mapped else None)

    # -- per-layer errors ------------------------------------------------------------
    injected = 3.1e-2 * error_scale
    out_err: list[Optional[float]] = []
    loc_err: list[Optional[float]] = []
    scales: list[float] = []
    inherited = 0.0
    for i, (module, cls, depth, parent, ops, kind) in enumerate(plan):
        scales.append(round(rng.uniform(1.0, 12.0), 3))
        noise = 10 ** rng.uniform(-7.2, -5.4) * error_scale
        if kind in ("fused", "dropout"):
            out_err.append(None), loc_err.append(None)
            continue
        if origin is not None and i == origin:
            inherited = injected
            out_err.append(injected), loc_err.append(injected * 0.97)
            continue
        if inherited:
            inherited = min(injected * 40, max(injected * 0.5, inherited * rng.uniform(0.97, 1.05)))
        out_err.append(max(noise, inherited * rng.uniform(0.8, 1.0)) if inherited else noise)
        loc_err.append(noise * rng.uniform(0.3, 1.0))

    layers: list[Layer] = []
    children: dict[int, list[int]] = {}
    for i, p in enumerate(plan):
        if p[3] is not None:
            children.setdefault(p[3], []).append(i)
    origin_ancestors: set[int] = set()
    if origin is not None:
        a = plan[origin][3]
        while a is not None:
            origin_ancestors.add(a)
            a = plan[a][3]

    for i, (module, cls, depth, parent, ops, kind) in enumerate(plan):
        ch = 64 * (2 ** min(3, int(module[5:].split(".")[0]) if module.startswith("stage") else 0))
        hw = max(7, 56 >> min(3, int(module[5:].split(".")[0]) if module.startswith("stage") else 0))
        shape = [1, ch, hw, hw]
        value = f"{kind}_{i}"
        status, metrics, local, note = OK, None, None, ""
        nodes: list[NodeInfo] = []
        inits: list[InitializerInfo] = []
        params: list[ParamInfo] = []
        op_types = list(ops)
        bf16 = origin is not None and i == origin
        if kind in ("root", "stage", "block"):
            kids = children.get(i, [])
            errs = [out_err[k] for k in kids if k < len(out_err) and out_err[k] is not None]
            lerrs = [loc_err[k] for k in kids if k < len(loc_err) and loc_err[k] is not None]
            op_types = sorted({op for k in kids for op in plan[k][4]})
            if errs:
                metrics = _metrics(rng, errs[-1], samples, scales[i])
                local = _metrics(rng, max(lerrs), samples, scales[i]) if lerrs else None
            if kind == "root":
                shape = [1, 1000]
        elif kind == "fused":
            status = FUSED
            note = f"folded into {module[:-1].rsplit('.', 1)[0]}.bn{module[-1]} (Conv+BatchNorm fusion)"
        elif kind == "dropout":
            status = NOT_EXPORTED
            note = "no node in the graph (Dropout is the identity in eval mode)"
        else:
            nodes, inits, params = _leaf_detail(rng, module, kind, ops, ch, shape, value, bf16)
            if kind == "act" and i % 11 == 5:
                status = UNMAPPED
                note = "nodes exist, but their output was fused away by the optimiser"
            else:
                metrics = _metrics(rng, out_err[i], samples, scales[i])
                local = _metrics(rng, loc_err[i], samples, scales[i])
        if metrics is not None and status == OK and not _passes(metrics, tol, scales[i]):
            status = DRIFT if not _passes(local, tol, scales[i]) else INHERITED
        if i in origin_ancestors and status == DRIFT:
            note = note or "contains the drift origin"
        if bf16:
            note = "weights were trained in bfloat16; the export keeps float32 copies that round differently"
        layers.append(Layer(
            index=i, module=module, cls=cls, call=0, depth=depth, parent=parent, status=status,
            onnx_values=[value] if metrics is not None else [],
            op_types=op_types, onnx_nodes=[n.name for n in nodes],
            output_shapes=[shape], metrics=metrics, local=local, note=note,
            nodes=nodes, initializers=inits, params=params,
        ))

    drifting = [l for l in layers if l.status == DRIFT and not children.get(l.index)]
    first = drifting[0] if drifting else None
    drift_origin = None
    if first is not None and first.metrics is not None:
        drift_origin = Origin(
            layer=first.index, module=first.module, cls=first.cls, call=first.call,
            onnx_values=first.onnx_values, op_types=first.op_types,
            max_abs=first.metrics.max_abs.worst, max_rel=first.metrics.max_rel.worst,
            local_max_abs=first.local.max_abs.worst if first.local else None,
            worst_sample=first.metrics.max_abs.worst_sample,
        )
    final_err = next((e for e in reversed(out_err) if e is not None), 1e-6)
    outputs = [Output("logits", 0, [1, 1000], _metrics(rng, final_err, samples, 8.0),
                      top1_agreement=0.95 if drift_origin else 1.0)]
    counts = {st: sum(1 for l in layers if l.status == st) for st in (FUSED, NOT_EXPORTED, UNMAPPED)}
    result = Result(
        schema_version=SCHEMA_VERSION,
        verdict=DRIFT if drift_origin else OK,
        drift_origin=drift_origin,
        tolerance=tol,
        samples=samples,
        layers=layers,
        outputs=outputs,
        coverage=Coverage(modules=len(layers), mapped=len(layers) - sum(counts.values()),
                          fused=counts[FUSED], not_exported=counts[NOT_EXPORTED],
                          unmapped=counts[UNMAPPED], localized=True),
        environment=Environment(torch="2.13.0", onnx="1.23.2", onnxruntime="1.32.0", numpy="2.3.0",
                                python="3.11.9", opset=18, producer="pytorch 2.13.0", exporter=config.exporter,
                                ort_opt_level=config.opt_level, threads=1 if config.deterministic else 4,
                                deterministic=config.deterministic, provider=config.provider),
        config=config,
        timings=dict(FROZEN_TIMINGS),
        notes=["synthetic result (drifttui.testing.synthetic)"],
        windows=[[0, len(layers) - 1]],
    )
    if findings and drift_origin is not None:
        o = layers[drift_origin.layer]
        result = result.with_(findings=[
            Finding("bf16-weights", "warning", o.module, o.onnx_nodes,
                    "weights hold bfloat16-rounded values; the ONNX initializers differ by up to 3.9e-03",
                    {"max_abs_diff": 3.9e-3, "dtype": "bfloat16"},
                    "export from the float32 checkpoint, or cast the model with .float() before export"),
            Finding("fusion", "info", o.module, o.onnx_nodes,
                    "Conv+BatchNorm were folded into one Conv by the exporter",
                    {"fused": [o.module.replace("bn", "conv")]}, "none needed: stated, not a drift"),
        ])
    if steps:
        result = result.with_(steps=[synthetic_step(n, result) for n in range(1, 7)])
    return result


def synthetic_step(number: int, result: Result) -> Step:
    """One of the six debugging steps, computed from ``result`` only (deterministic)."""
    o = result.drift_origin
    title = STEP_TITLES.get(number, f"step {number}")
    if o is None:
        return Step(number, title, "skipped", "no drift at this tolerance", {}, "")
    layer = result.layers[o.layer]
    if number == 1:
        return Step(1, title, "pass", f"re-measured {o.module} with cloned outputs: the drift is real",
                    {"max_abs": o.max_abs, "remeasured_max_abs": o.max_abs},
                    "not a capture artifact: look at the origin's node (step 3)", [o.layer])
    if number == 2:
        return Step(2, title, "fail", f"with zero input the first drifting module is still {o.module}",
                    {"zero_input_origin": o.module, "max_abs": o.max_abs * 0.8},
                    "the error does not depend on the data: suspect weights or constants", [o.layer])
    if number == 3:
        ops = ",".join(layer.op_types) or "?"
        return Step(3, title, "fail", f"{o.module} ({ops}) drifts on its own inputs: "
                    f"local max abs {o.local_max_abs or 0:.1e}",
                    {"local_max_abs": o.local_max_abs, "op_types": layer.op_types},
                    "compare the node's initializers with the torch parameters", [o.layer])
    if number == 4:
        before = [l.index for l in result.layers if l.index < o.layer and l.metrics is not None][-2:]
        return Step(4, title, "inconclusive", f"the origin stays {o.module} from atol 1e-06 to 1e-02",
                    {"atol": [1e-6, 1e-4, 1e-2], "origin": [o.module] * 3},
                    "the origin does not depend on the tolerance", [o.layer] + before)
    if number == 5:
        return Step(5, title, "pass", "two deterministic runs agree bit for bit",
                    {"runs": 2, "max_abs_between_runs": 0.0}, "run-to-run noise is not the cause", [o.layer])
    diffs = {i.name: i.torch_max_abs_diff for i in layer.initializers if i.torch_max_abs_diff}
    return Step(6, title, "fail" if diffs else "pass",
                f"{len(diffs)} initializer(s) of {o.module} differ from their torch parameter",
                {"diffs": diffs}, "export from the float32 checkpoint", [o.layer])
