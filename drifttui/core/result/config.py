"""What a run was asked for: the model, the file, the inputs, the tolerance, the runtime's settings and
the served model.  Frozen: the TUI and the pipeline rerun by replacing fields of it, and the stages'
reuse keys (``pipeline.prepare_key``, ``capture_key``) are read from it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


#: ONNX Runtime's graph optimisation levels, lowest first (--opt-level, --output-opt-level, the TUI's `o`)
OPT_LEVELS = ("disable", "basic", "extended", "all")


@dataclass(frozen=True)
class Config:
    """What was asked for. The TUI reruns by changing fields of this."""

    model: str
    onnx: Optional[str] = None
    reference_onnx: Optional[str] = None   # --reference-onnx: the file before the deployment pipeline
    inputs: Optional[str] = None
    example: Optional[str] = None
    samples: int = 100
    seed: int = 0
    atol: float = 1e-4
    rtol: float = 1e-4
    opt_level: str = "disable"
    deterministic: bool = False
    exporter: str = "auto"             # auto: dynamo, then TorchScript if dynamo fails; or one, strictly
    provider: str = "CPUExecutionProvider"
    zero_input: bool = False
    max_memory: Optional[int] = None   # bytes per capture pass (--max-memory); None: no limit
    batch: int = 1                     # samples per ORT run / torch forward (--batch); 1: one at a time
    trust_model_file: bool = False     # --trust-model-file: load a .pt2 although that runs code from it
    # which samples get the per-layer pass (--layer-samples): "auto" = sample 0 and the 2 samples with
    # the largest output error; "K" = sample 0 and the K-1 worst; "all" = every sample.  The output
    # verdict always covers every sample.
    layer_samples: str = "auto"
    # ORT level of the output pass (every sample, the model outputs only): what a deployment runs;
    # ORT's own default is "all".  ``opt_level`` is the level of the per-layer pass (localisation,
    # where fusions would hide the values compared).
    output_opt_level: str = "all"
    # the output pass's session options beyond the level, as (key, value) pairs: what a served
    # model's config sets (runtime/triton/settings.py; sessions.apply_settings)
    session: tuple[tuple[str, str], ...] = ()
    # the served model (docs/triton.md): a Triton model repository and/or a live server, the model's
    # name and version there; the batch sizes of --batch-sweep
    triton_repo: Optional[str] = None
    triton_url: Optional[str] = None
    triton_model: Optional[str] = None
    triton_version: Optional[int] = None
    batch_sweep: tuple[int, ...] = ()
