"""Batched capture (--batch N): the same per-layer results as one sample at a time."""
import math

import pytest

BATCH = 2     # 3 samples (run_cache default): the last batch is a partial one


def _statuses(r):
    return [(L.module, L.call, L.status) for L in r.layers]


def _close(a, b):
    # batched GEMMs round differently: float noise, relative to the value or to a tenth of atol
    return math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-5)


def _agree(plain, batched, same_local_samples=True):
    assert batched.verdict == plain.verdict
    assert _statuses(batched) == _statuses(plain)
    o_p, o_b = plain.drift_origin, batched.drift_origin
    assert (o_p and (o_p.module, o_p.call)) == (o_b and (o_b.module, o_b.call))
    assert batched.samples == plain.samples
    for lp, lb in zip(plain.layers, batched.layers):
        if lp.metrics is None:
            assert lb.metrics is None
            continue
        assert lb.metrics.samples == lp.metrics.samples
        assert _close(lb.metrics.max_abs.worst, lp.metrics.max_abs.worst), (lp.module, lp.metrics, lb.metrics)
        if lp.local is not None:
            assert lb.local is not None
            # the local run covers sample 0 and the samples failing in the layer's window
            assert lb.local.samples == lp.local.samples or not same_local_samples
            assert _close(lb.local.max_abs.worst, lp.local.max_abs.worst), lp.module
    for op, ob in zip(plain.outputs, batched.outputs):
        assert _close(ob.metrics.max_abs.worst, op.metrics.max_abs.worst)
        assert ob.metrics.samples == op.metrics.samples
        assert ob.top1_agreement == op.top1_agreement
    if o_p is not None:
        # per-sample metrics: the worst sample of the origin is the same sample
        lp, lb = plain.layers[o_p.layer], batched.layers[o_b.layer]
        assert lb.metrics.max_abs.worst_sample == lp.metrics.max_abs.worst_sample
    assert not any("--batch" in n for n in batched.notes), batched.notes


@pytest.mark.parametrize("example", ["unet", "unet-resize", "transformer", "transformer-ln-eps"])
def test_batched_equals_plain(run_cache, example):
    plain = run_cache(example=example)
    batched = run_cache(example=example, batch=BATCH)
    _agree(plain, batched)
    if example.endswith(("-resize", "-eps")):
        assert plain.verdict == "drift"


def test_windowed_and_batched_equal_plain(run_cache):
    """Residual CNN with folded BN, cut into windows, two samples per run."""
    plain = run_cache(example="resnet18-bf16", exporter="dynamo")
    both = run_cache(example="resnet18-bf16", exporter="dynamo", batch=BATCH, max_memory=256 * 1024)
    assert len(both.windows) >= 3
    _agree(plain, both, same_local_samples=False)


def test_static_onnx_file_falls_back_with_a_note(deep_onnx, deep_run):
    _, drifted = deep_onnx
    plain = deep_run(onnx=drifted)
    batched = deep_run(onnx=drifted, batch=4)
    assert any("--batch 4 was not applied" in n and "static dim 0" in n for n in batched.notes), batched.notes
    assert _statuses(batched) == _statuses(plain)
    assert [L.metrics.max_abs.worst for L in batched.layers if L.metrics] == \
        [L.metrics.max_abs.worst for L in plain.layers if L.metrics]


def test_batch_option_and_validation():
    from drifttui.cli import build_parser, config_from_args
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once
    from drifttui.errors import InputError

    args = build_parser().parse_args(["check", "--example", "unet", "--batch", "8"])
    assert config_from_args(args).batch == 8
    assert config_from_args(build_parser().parse_args(["check", "--example", "unet"])).batch == 1
    with pytest.raises(InputError):
        run_once(Config(model="example:unet", batch=0)).result


def test_split_helpers():
    import torch

    from drifttui.core.capture.batch import compare_split
    from drifttui.core.prepare.batch_probe import splits

    assert splits((1, 4), (3, 4), 3) and splits((4, 16, 16), (12, 16, 16), 3)   # merged (b*h, ...) too
    assert not splits((1, 4), (1, 4), 3) and not splits((), (), 3)
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    o = t.numpy().copy()
    o[2, 1] += 1.0
    stats = compare_split(t, o, 3, 1e-4, 1e-4)
    assert [s.fails() for s in stats] == [False, False, True]
    assert stats[2].max_abs == 1.0 and stats[0].max_abs == 0.0
