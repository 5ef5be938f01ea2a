"""Verified causes, by job: ``locate`` (where inside the origin), ``propose`` (the candidate patches,
assembled by ``propose.assemble``), ``verify`` (each patch tried on the origin's own nodes, kept when it
removes the drift; ``holds``: on fresh samples), ``conclude`` (the verified patches merged into the
findings, ranked) and ``deliver`` (``repro``, ``repair``, the keep-in-float32 list).

This face is what the rest of explain reads: ``verify_at_origin`` and its ``Explanation``."""
from drifttui.core.explain.causes.conclude import Trial, merge, rank
from drifttui.core.explain.causes.propose.assemble import candidate_patches
from drifttui.core.explain.causes.verify import Explanation, verify_at_origin

__all__ = ["Explanation", "Trial", "candidate_patches", "merge", "rank", "verify_at_origin"]
