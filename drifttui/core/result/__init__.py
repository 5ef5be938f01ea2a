"""The result types: what the stages write and every front end reads (``config``: Config, what a run
was asked for; ``schema``: Result and its parts, statuses, the JSON schema; ``precision``, ``channels``,
``served``: parts of it; ``codec``: dataclasses to and from JSON).  This face re-exports ``schema``
(which carries Config), so ``from drifttui.core.result import Result, Config``."""
from drifttui.core.result.schema import *  # noqa: F401,F403
