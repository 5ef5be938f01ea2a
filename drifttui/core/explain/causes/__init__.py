"""Verified causes, by job: ``locate`` (where inside the origin), ``propose`` (the candidate patches),
``verify`` (each patch tried on the origin's own nodes, kept when it removes the drift; ``holds``: on
fresh samples) and ``deliver`` (``repro``, ``repair``, the keep-in-float32 list).

This face is what the rest of explain reads: ``verify_at_origin`` and its ``Explanation``."""
from drifttui.core.explain.causes.verify import Explanation, Trial, candidate_patches, merge, rank, verify_at_origin

__all__ = ["Explanation", "Trial", "candidate_patches", "merge", "rank", "verify_at_origin"]
