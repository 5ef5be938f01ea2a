"""The report's parts about the served model (docs/triton.md, docs/json-schema.md): the batch sweep
(``--batch-sweep``) and the served comparison (``--triton-repo`` / ``--triton-url``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class BatchLayer:
    layer: int                   # the layer (module call) index
    module: str
    max_abs: list[float]         # per swept size: max |alone - in the batch| over the samples and outputs
    scale: float                 # max |alone| of the layer's output
    depends: bool                # over the tolerance at some size (decided by core/decide/served.py)
    cls: str = ""


@dataclass(frozen=True)
class BatchSweep:
    """The same samples run alone and concatenated at each size through the file (ONNX Runtime)."""

    sizes: list[int]
    samples: int                          # samples in the largest batch
    invariant: bool                       # no value depends on the batch at the tolerance
    first_layer: Optional[int] = None     # the first layer whose output depends on the batch
    first_module: str = ""
    outputs_max_abs: list[float] = field(default_factory=list)   # the model outputs, per size, at the served level
    layers: list[BatchLayer] = field(default_factory=list)       # every compared layer, in call order
    note: str = ""


@dataclass(frozen=True)
class ServedOutput:
    name: str
    max_abs_vs_local: float      # served vs the file's own local run (same settings), worst sample
    max_abs_vs_torch: float
    scale: float                 # max |local| over the samples
    top1_vs_torch: Optional[float] = None        # served argmax == torch argmax, over the samples
    local_top1_vs_torch: Optional[float] = None  # the local file's, for the same samples
    batched_top1_vs_torch: Optional[float] = None  # the concurrent requests' (the dynamic batcher's batches)
    fails: bool = False          # served vs local over the tolerance


@dataclass(frozen=True)
class ServedRun:
    mode: str                    # "sequential" (one request at a time) | "concurrent"
    requests: int
    max_abs_vs_local: float
    seconds: float


@dataclass(frozen=True)
class Served:
    """What a Triton model repository or server serves, and how it compares."""

    source: str                            # "repository" | "server"
    model: str
    version: Optional[int] = None
    repo: str = ""
    url: str = ""
    file: str = ""                         # the served file (repository), or the local file compared
    why_file: str = ""                     # how the repository's file was chosen
    config_fields: list[str] = field(default_factory=list)    # the config fields that changed the run
    unreproducible: list[str] = field(default_factory=list)   # what this machine cannot run as served
    max_batch_size: int = 0
    dynamic_batching: bool = False
    outputs: list[ServedOutput] = field(default_factory=list)   # server only
    runs: list[ServedRun] = field(default_factory=list)          # server only
    verdict: str = ""                      # "same" | "differs" | "" (repository only: nothing served)
    reason: str = ""                       # differs: batch dependence | different file or version | boundary | accelerator
    detail: str = ""                       # the reason's figures, one sentence

    def fields_shown(self) -> list[str]:
        return list(self.config_fields) or ["(no field changes the run: ONNX Runtime's defaults)"]
