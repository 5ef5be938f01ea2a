"""Compositions of pipelines, not a fifth stage: each runs whole pipelines (or their stages) on several
files, settings or servers and compares what they decided (stage and pass bisects, the tolerance
advisor, the served model against the file)."""
