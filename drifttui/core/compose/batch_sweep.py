"""``--batch-sweep 1,4,8``: is the file batch invariant?  The same samples run alone and concatenated
along dim 0 at each size through ONNX Runtime; every mapped layer's output is cut back into per-sample
chunks and compared with the sample's own run.  The first layer (in call order) over the tolerance is
where the batch starts to matter: a dynamic batcher (Triton's) is only safe when none is.

Per-layer values come from sessions at the per-layer level (``Config.opt_level``), one window at a
time (``Prepared.windows``: the memory budget); the model outputs also at the served level
(``output_opt_level`` and the served session options).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.decide.served import over, sweep_invariant
from drifttui.core.model.inputs import cat_samples, onnx_feeds
from drifttui.core.prepare.batch_probe import static_inputs
from drifttui.core.prepare.stage import Prepared, graph_inputs
from drifttui.core.result import Config
from drifttui.core.result.served import BatchLayer, BatchSweep
from drifttui.core.runtime import sessions
from drifttui.errors import InputError


def parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(t) for t in text.split(",") if t.strip()}))
    except ValueError:
        sizes = ()
    if not sizes or sizes[0] < 1 or sizes[-1] > 256:
        raise InputError(f"--batch-sweep {text!r} is not a list of batch sizes", "write e.g. --batch-sweep 1,4,8")
    return sizes


def _split(arr: np.ndarray, k: int, alone: list[np.ndarray]) -> Optional[list[np.ndarray]]:
    base = alone[0]
    if arr.ndim == 0 or arr.shape[0] != k * (base.shape[0] if base.ndim else 0) or arr.shape[1:] != base.shape[1:]:
        return None
    step = base.shape[0]
    return [arr[j * step:(j + 1) * step] for j in range(k)]


def _dev(runs: dict[int, dict[str, np.ndarray]], alone: list[dict[str, np.ndarray]], value: str,
         sizes: tuple[int, ...]) -> tuple[list[float], float, bool]:
    """(max |alone - batched| per size, max |alone|, splits) of one value."""
    singles = [a[value].astype(np.float64) for a in alone]
    scale = max(float(np.abs(s).max()) if s.size else 0.0 for s in singles)
    devs = []
    for k in sizes:
        if k == 1:
            devs.append(0.0)
            continue
        parts = _split(runs[k][value], k, singles[:k])
        if parts is None:
            return [], scale, False
        devs.append(max(float(np.abs(p.astype(np.float64) - s).max()) if s.size else 0.0
                        for p, s in zip(parts, singles)))
    return devs, scale, True


def _run_sizes(session: Any, feeds_of: Any, sizes: tuple[int, ...], names: list[str]) -> tuple[list, dict]:
    alone = [sessions.run(session, feeds_of([i]), names) for i in range(max(sizes))]
    runs = {k: sessions.run(session, feeds_of(list(range(k))), names) for k in sizes if k > 1}
    return alone, runs


def sweep(pr: Prepared, cfg: Config, sizes: tuple[int, ...]) -> BatchSweep:
    static = static_inputs(graph_inputs(pr.proto))
    if static:
        return BatchSweep(list(sizes), max(sizes), True, note=f"not swept: the file's input(s) {', '.join(static[:4])} "
                          "have a static dim 0 (it takes one batch size; Triton serves it with max_batch_size 0)")
    source = pr.source(cfg.seed, cfg.zero_input)
    samples = [source.sample(i) for i in range(max(sizes))]

    def feeds_of(ids: list[int]) -> dict:
        batch = cat_samples([samples[i] for i in ids]) if len(ids) > 1 else samples[ids[0]]
        return onnx_feeds(batch, pr.index.graph_inputs, pr.input_dtypes)

    out_names = list(pr.index.graph_outputs)
    floor = sessions.make_session(pr.deployed, cfg.output_opt_level, cfg.deterministic, cfg.provider, pr.workdir,
                                  "sweep-out.onnx", data_dir=pr.index.data_dir, settings=cfg.session)
    alone, runs = _run_sizes(floor, feeds_of, sizes, out_names)
    per_size, out_fail = [0.0] * len(sizes), False
    for name in out_names:
        devs, scale, ok = _dev(runs, alone, name, sizes)
        if ok:
            per_size = [max(a, b) for a, b in zip(per_size, devs)]
            out_fail = out_fail or over(devs, cfg.atol, cfg.rtol, scale)
    layers = _layers(pr, cfg, sizes, feeds_of)
    depending = [lay for lay in layers if lay.depends]
    first = _first(pr, depending)
    return BatchSweep(list(sizes), max(sizes), sweep_invariant(out_fail, len(depending)),
                      first.layer if first else None, first.module if first else "",
                      per_size, layers)


def _first(pr: Prepared, depends: list[BatchLayer]) -> Optional[BatchLayer]:
    """The dependent layer that finishes first (the innermost, earliest): its parents inherit it."""
    inner = [lay for lay in depends if pr.calls[lay.layer].module] or depends
    return min(inner, key=lambda lay: (pr.calls[lay.layer].end_order, lay.layer), default=None)


def _layers(pr: Prepared, cfg: Config, sizes: tuple[int, ...], feeds_of: Any) -> list[BatchLayer]:
    out: dict[int, BatchLayer] = {}
    for w in pr.windows:
        values = [v for ci in sorted(w.calls) for v in pr.plan.calls[ci].outputs.values()]
        if not values:
            continue
        sess = sessions.make_session(pr.proto, cfg.opt_level, cfg.deterministic, cfg.provider, pr.workdir,
                                     "sweep.onnx", extra_outputs=values, data_dir=pr.index.data_dir, prepack=False,
                                     types=pr.index.elem_types)
        alone, runs = _run_sizes(sess, feeds_of, sizes, list(dict.fromkeys(values)))
        for ci in sorted(w.calls):
            devs_all, scale_all, ok_all = [0.0] * len(sizes), 0.0, True
            for v in pr.plan.calls[ci].outputs.values():
                devs, scale, ok = _dev(runs, alone, v, sizes)
                ok_all = ok_all and ok
                if ok:
                    devs_all = [max(a, b) for a, b in zip(devs_all, devs)]
                    scale_all = max(scale_all, scale)
            if ok_all and pr.plan.calls[ci].outputs:
                depends = over(devs_all, cfg.atol, cfg.rtol, scale_all)
                out[ci] = BatchLayer(ci, pr.calls[ci].module, devs_all, scale_all, bool(depends), pr.calls[ci].cls)
        del alone, runs, sess
    return [out[k] for k in sorted(out)]
