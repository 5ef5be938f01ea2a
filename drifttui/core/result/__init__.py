"""The result types: what the stages write and every front end reads (``schema``: Config, Result and
its parts, statuses, the JSON schema; ``precision``, ``channels``: parts of it; ``codec``: dataclasses
to and from JSON).  This face re-exports ``schema``, so ``from drifttui.core.result import Result``."""
from drifttui.core.result.schema import *  # noqa: F401,F403
