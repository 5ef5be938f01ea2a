"""Stage 2, ``capture(prepared, config) -> Capture`` (stage.py): the observer check, the output pass on
every sample, the per-layer pass (passes.py, batched by batch.py) on the layer samples.  Every statistic
is tolerance-free, so a tolerance change only re-decides."""
