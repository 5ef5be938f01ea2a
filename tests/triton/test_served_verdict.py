"""The served verdict's reasons, from the figures a comparison measured."""
from drifttui.core.compose.served_verdict import (ACCELERATOR, BATCH, BOUNDARY, DIFFERS, OTHER_FILE, SAME,
                                                  decide_served)
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
