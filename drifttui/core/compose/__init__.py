"""Compositions of pipelines: runs of the four stages (and of ONNX Runtime) put side by side to
answer a question no single run answers.

    stage_bisect     which file of a deployment pipeline first drifts (torch vs each stage, each
                     stage vs the one before), its origin and cause, and the pass that does it
    sim_passes       the pass bisect for onnxsim / onnxslim, where their APIs can skip a pass
    onnx_pair        a processed file against the raw export, layer by layer, no torch model
    noise_floor      what the numbers do when nothing is wrong (levels, threads, repeats)
    tolerance_advice the atol / rtol that passes the clean model with a margin, and what a tolerance hides
    served           the served model (Triton) against torch and against the file's own local run
    batch_sweep      the first layer whose output depends on the batch (is a dynamic batcher safe?)

The ONNX Runtime pass bisect itself is a runtime primitive (``core/runtime/passes``): step 3
uses it too, and explain sits below this layer.  Nothing here decides pass/fail with a rule of
its own: the checks are ``core.decide``'s, the comparisons ``metrics.compare``'s tolerance rule.
"""
