"""Compositions of pipelines: runs that drive the engine more than once (the served comparison, the
batch sweep)."""
