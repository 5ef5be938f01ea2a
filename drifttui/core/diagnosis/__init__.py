"""What the debugging steps and the drift checks share (the run's context, clean reruns,
ORT optimisation-level sweeps).  Steps import checks and this package; checks import this
package only; this package imports neither (import-linter contracts in pyproject.toml)."""
