"""What an output's numbers alone do not say, written by decide and read by the reports: light (no
torch), so the text and TUI reports can quote them without loading the engine."""
from __future__ import annotations

from drifttui.core.result import Output


def output_notes(outputs: list[Output]) -> list[str]:
    """What an output's numbers alone do not say, first among the notes: ONNX Runtime gave NaN/Inf
    where torch did not (which output, which samples), or another dtype than torch (issue 22)."""
    notes = []
    for o in outputs:
        if o.nan_samples:
            shown = ", ".join(str(i) for i in o.nan_samples[:5]) + (" …" if len(o.nan_samples) > 5 else "")
            notes.append(f"output {o.name}: ONNX Runtime gave NaN/Inf where torch is finite in "
                         f"{len(o.nan_samples)} sample(s) ({shown}; {o.metrics.nan_mismatch} element(s))")
        if o.dtype and o.onnx_dtype and o.dtype != o.onnx_dtype:
            notes.append(f"output {o.name}: dtype differs: torch {o.dtype}, ONNX {o.onnx_dtype} (values compared "
                         "after conversion; code that reads this output gets another type)")
    return notes
