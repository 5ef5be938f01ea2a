"""Stage 1, ``prepare(config) -> Prepared`` (stage.py): load the model, export it (or take the user's
file), index the graph, trace the module calls, plan the module <-> value mapping (plan/), build the
local graph, the memory windows and the static layer details; probe whether samples can be batched."""
