"""The served verdict's reasons, from the figures a comparison measured."""
from drifttui.core.decide.served import (ACCELERATOR, BATCH, BOUNDARY, DIFFERS, OTHER_FILE, SAME, decide_served,
                                         over, sweep_invariant)
from drifttui.core.result.served import BatchLayer, BatchSweep, ServedRun

RUNS = [ServedRun("sequential", 100, 0.3, 1.0), ServedRun("concurrent", 100, 0.4, 0.5)]


def test_reasons_in_order_of_evidence():
    both = {"sequential": True, "concurrent": True}
    assert decide_served({"sequential": False, "concurrent": False}, RUNS, [], [], None)[0] == SAME
    assert decide_served(both, RUNS, ["input x: float16 at the server, float32 in the file"], ["CUDA"], None)[1] == BOUNDARY
    assert decide_served(both, RUNS, [], ["TensorRT accelerator (precision_mode FP16)"], None)[1] == ACCELERATOR
    verdict, reason, detail = decide_served(both, RUNS, [], [], None)
    assert (verdict, reason) == (DIFFERS, OTHER_FILE) and "0.3" in detail


def test_batch_dependence_names_the_sweeps_layer():
    sweep = BatchSweep([1, 8], 8, False, 3, "norm", [0.0, 0.2], [BatchLayer(3, "norm", [0.0, 0.5], 1.0, True, "BatchNorm1d")])
    verdict, reason, detail = decide_served({"sequential": False, "concurrent": True}, RUNS, [], [], sweep)
    assert (verdict, reason) == (DIFFERS, BATCH)
    assert "layer #3 norm (BatchNorm1d)" in detail


def test_over_applies_the_tolerance_rule_at_the_values_scale():
    # |d| <= atol + rtol * scale: 1e-3 passes at scale 100 with rtol 1e-4 (bound 1.01e-2), fails at scale 1
    assert not over([0.0, 1e-3], 1e-4, 1e-4, 100.0)
    assert over([0.0, 1e-3], 1e-4, 1e-4, 1.0)
    assert over([float("inf")], 1e-4, 1e-4, 1.0)     # a NaN answer arrives as inf: it fails
    assert not over([], 1e-4, 1e-4, 1.0)


def test_a_sweep_passes_only_when_nothing_depends_on_the_batch():
    assert sweep_invariant(False, 0)
    assert not sweep_invariant(True, 0)
    assert not sweep_invariant(False, 2)


def test_batch_reason_says_when_the_sweep_here_sees_nothing():
    sweep = BatchSweep([1, 4], 4, True)
    verdict, reason, detail = decide_served({"sequential": False, "concurrent": True}, RUNS, [], [], sweep)
    assert (verdict, reason) == (DIFFERS, BATCH) and "the server's own batching does" in detail
