"""Compatibility: the context moved to ``drifttui.core.diagnosis.context`` (shared with the checks)."""
from drifttui.core.diagnosis.context import Context, clean, context_for, forget_contexts  # noqa: F401
