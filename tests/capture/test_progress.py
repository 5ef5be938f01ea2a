"""Progressive results and the cost rules of the sample loop."""
from tests.capture.conftest import DEEP, INPUTS


def _run(onnx, samples=4, **kw):
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once

    seen = []
    result = run_once(Config(model=f"{DEEP}:deep_mlp", inputs=INPUTS, onnx=str(onnx), samples=samples, **kw), 
        progress=seen.append).result
    return result, seen


def test_partial_result_with_per_layer_metrics_arrives_before_the_end(deep_onnx):
    result, seen = _run(deep_onnx[1], layer_samples="all")
    stages = [p.stage for p in seen]
    assert stages[-1] == "done"
    partials = [(k, p) for k, p in enumerate(seen) if p.partial is not None]
    assert partials, "no partial result was sent"
    k, first = partials[0]
    assert first.stage == "samples" and first.done == 1 and k < len(seen) - 1
    part = first.partial
    assert part.samples == 1
    metered = [L for L in part.layers if L.metrics is not None]
    assert len(metered) == sum(1 for L in result.layers if L.metrics is not None)
    assert all(L.metrics.samples == 1 for L in metered)
    assert part.drift_origin is not None and part.drift_origin.module == result.drift_origin.module
    assert result.samples == 4 and all(L.metrics.samples == 4 for L in result.layers if L.metrics)


def test_windowed_run_sends_partials_per_window(deep_onnx):
    result, seen = _run(deep_onnx[0], samples=2, max_memory=96 * 1024)
    assert len(result.windows) >= 3
    partials = [p.partial for p in seen if p.partial is not None]
    assert len(partials) >= len(result.windows) - 1
    counts = [sum(1 for L in r.layers if L.metrics is not None) for r in partials]
    assert counts == sorted(counts) and counts[0] < counts[-1]     # layers fill in window by window


def _layer_samples(result):
    return {L.metrics.samples for L in result.layers if L.metrics is not None}


def _output_errors(capture):
    """Per sample, the key the layer samples are chosen by: max over outputs of max |d| / max |torch|."""
    keys = {}
    for agg in capture.outputs:
        for i, rel in zip(agg.sample_ids, agg.max_rel):
            keys[i] = max(keys.get(i, 0.0), rel)
    return keys


def test_per_layer_capture_only_on_sample_0_and_the_worst_samples(deep_onnx):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    run = run_once(Config(model=f"{DEEP}:deep_mlp", inputs=INPUTS, onnx=str(deep_onnx[1]), samples=8))
    drifted = run.result
    chosen = run.capture.layer_samples
    keys = _output_errors(run.capture)
    assert len(keys) == 8                       # the output pass saw every sample
    two_worst = sorted(range(1, 8), key=lambda i: (-keys[i], i))[:2]
    assert list(chosen) == [0] + sorted(two_worst)
    worst = drifted.outputs[0].metrics.max_rel.worst_sample
    assert worst in chosen
    # every layer sample gets its local run; the per-layer metrics say over how many samples they are
    assert drifted.timings["local_runs"] == 3
    assert _layer_samples(drifted) == {3}
    assert drifted.outputs[0].metrics.samples == 8 and drifted.samples == 8
    assert any("compared on 3 of the 8 samples" in n for n in drifted.notes)
    origin = drifted.layers[drifted.drift_origin.layer]
    assert origin.local.samples == 3 and origin.local.max_abs.worst > 1e-4
    every, _ = _run(deep_onnx[1], samples=8, layer_samples="all")
    assert every.timings["local_runs"] == 8 and _layer_samples(every) == {8}
    assert not any("of the 8 samples" in n for n in every.notes)
    five, _ = _run(deep_onnx[1], samples=8, layer_samples="5")
    assert five.timings["local_runs"] == 5 and _layer_samples(five) == {5}


def test_per_layer_passes_do_not_grow_with_the_number_of_samples(deep_onnx):
    """One more sample costs one output pass: the per-layer passes stay at sample 0 + the 2 worst."""
    small, _ = _run(deep_onnx[1], samples=4)
    large, _ = _run(deep_onnx[1], samples=24)
    assert small.timings["local_runs"] == large.timings["local_runs"] == 3
    assert large.drift_origin.module == small.drift_origin.module


def test_unknown_layer_samples_is_refused():
    import pytest

    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from drifttui.errors import InputError

    for bad in ("0", "some", "-2"):
        with pytest.raises(InputError, match="--layer-samples"):
            run_once(Config(model=f"{DEEP}:deep_mlp", inputs=INPUTS, layer_samples=bad))


def test_the_time_left_counts_the_whole_sample_and_is_not_guessed_from_sample_0():
    """Fourth pass: `samples 1/100, about 1 s left` for a 6 s loop.  Sample 0's ORT run was the
    whole measure (its torch outputs come from its per-layer pass) and only the ORT run and torch
    forward were timed; a sample also costs its drawing (here 0.1 s) and the loop around it."""
    from pathlib import Path

    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config
    from tests.capture import slow_inputs

    here = Path(slow_inputs.__file__)
    n, seen = 6, []
    run_once(Config(model=f"{here}:model", inputs=f"{here}:inputs", samples=n, exporter="torchscript"),
             progress=seen.append)
    counts = [p for p in seen if p.stage == "samples" and p.message.startswith("sample ")]
    assert [p.done for p in counts] == list(range(1, n))
    assert counts[0].eta is None
    for p in counts[1:]:
        assert p.eta >= 0.8 * slow_inputs.DRAW * (n - p.done), (p.done, p.eta)
