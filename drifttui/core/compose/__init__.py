"""Compositions of pipelines: runs of the four stages (and of ONNX Runtime) put side by side to
answer a question no single run answers.

    stage_bisect     which file of a deployment pipeline first drifts (torch vs each stage,
                     each stage vs the one before), its origin and cause
    pass_bisect      which ONNX Runtime graph transformer (or rewrite rule) moves the numbers
    ort_passes       ONNX Runtime's transformers: the ones that changed a graph, a session with some disabled
    sim_passes       the same question for onnxsim / onnxslim, where their APIs can skip a pass
    noise_floor      what the numbers do when nothing is wrong (levels, threads, repeats)
    tolerance_advice the atol / rtol that passes the clean model with a margin, and what a tolerance hides
    settings         the setting that avoids a pass, in session code and in Triton's config

None of them decides pass/fail: each reads results decided by ``core.decide`` or the tolerance rule.
"""
