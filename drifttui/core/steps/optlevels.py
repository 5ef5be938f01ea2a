"""Compatibility: the ORT optimisation-level sweep moved to ``drifttui.core.diagnosis.sweep``."""
from drifttui.core.diagnosis.sweep import opt_sweep  # noqa: F401
