"""Windowed capture (--max-memory): several windows of consecutive layers, same per-layer results."""
import pytest

from drifttui.core.base.units import parse_size

BUDGET = 96 * 1024     # the deep model's intermediates are ~330 KiB per sample (8x64 floats, both sides)


def _layers(r):
    return [(L.module, L.call, L.status, L.metrics.max_abs.worst if L.metrics else None,
             L.metrics.samples if L.metrics else None) for L in r.layers]


def _check_windows(r, n_layers):
    assert len(r.windows) >= 3
    assert r.windows[0][0] == 0 and r.windows[-1][1] == n_layers - 1
    for (a, b), (c, _) in zip(r.windows, r.windows[1:]):
        assert a <= b and c == b + 1          # consecutive, no gap, no overlap
    assert any("windows" in n for n in r.notes)


def test_clean_model_windowed_equals_plain(deep_onnx, deep_run):
    path, _ = deep_onnx
    plain = deep_run(onnx=path)
    windowed = deep_run(onnx=path, max_memory=BUDGET)
    assert plain.windows == [[0, len(plain.layers) - 1]]
    _check_windows(windowed, len(plain.layers))
    assert plain.verdict == windowed.verdict == "ok"
    assert _layers(windowed) == _layers(plain)
    assert [o.metrics.max_abs.worst for o in windowed.outputs] == [o.metrics.max_abs.worst for o in plain.outputs]


def test_drifted_model_windowed_names_the_same_origin(deep_onnx, deep_run):
    _, drifted = deep_onnx
    plain = deep_run(onnx=drifted)
    windowed = deep_run(onnx=drifted, max_memory=BUDGET)
    _check_windows(windowed, len(plain.layers))
    assert plain.verdict == windowed.verdict == "drift"
    assert plain.drift_origin.module == windowed.drift_origin.module == "50"
    assert _layers(windowed) == _layers(plain)
    # the origin's own (local) error was measured in its window, the same as in one pass
    o_p, o_w = plain.layers[plain.drift_origin.layer], windowed.layers[windowed.drift_origin.layer]
    assert o_w.local is not None and o_w.local.max_abs.worst == o_p.local.max_abs.worst
    # the origin lies inside a window that is not the first one: the windows really split the model
    first = windowed.windows[0]
    assert not first[0] <= windowed.drift_origin.layer <= first[1]
    statuses = [L.status for L in windowed.layers]
    assert statuses.count("drift") == 1 and "inherited" in statuses


def test_budget_larger_than_the_model_is_one_pass(deep_onnx, deep_run):
    path, _ = deep_onnx
    r = deep_run(onnx=path, max_memory=1 << 30)
    assert r.windows == [[0, len(r.layers) - 1]]


def test_parse_size():
    assert parse_size("512M") == 512 << 20
    assert parse_size("2G") == 2 << 30
    assert parse_size("1.5k") == 1536
    assert parse_size("1000") == 1000
    from drifttui.errors import InputError

    for bad in ("", "12Q", "-1G", "0"):
        with pytest.raises(InputError):
            parse_size(bad)


def test_cli_max_memory_option():
    from drifttui.cli import build_parser

    args = build_parser().parse_args(["check", "--example", "resnet18", "--max-memory", "256M"])
    assert args.max_memory == 256 << 20
    with pytest.raises(SystemExit):
        build_parser().parse_args(["check", "--example", "resnet18", "--max-memory", "lots"])


def test_windowed_example_with_residuals_and_folded_bn(run_cache):
    """A CNN with skip connections, in-place ReLUs and Conv+BN folding: windows cut through blocks."""
    plain = run_cache(example="resnet18-bf16", exporter="dynamo")
    windowed = run_cache(example="resnet18-bf16", exporter="dynamo", max_memory=256 * 1024)
    assert len(windowed.windows) >= 3
    assert windowed.drift_origin.module == plain.drift_origin.module
    assert _layers(windowed) == _layers(plain)


def test_every_layer_in_its_own_window(deep_onnx, deep_run):
    """The smallest budget: one window per module call, windows without own nodes included."""
    _, drifted = deep_onnx
    plain = deep_run(onnx=drifted)
    single = deep_run(onnx=drifted, max_memory=1, samples=2)
    assert len(single.windows) == len(plain.layers)
    assert any("alone exceed" in n for n in single.notes)
    assert single.drift_origin.module == plain.drift_origin.module
    assert [L.status for L in single.layers] == [L.status for L in plain.layers]
