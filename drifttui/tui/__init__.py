"""The Textual front end of drifttui. Never imports torch, onnx or onnxruntime.

Entry points: :class:`drifttui.tui.app.DriftApp` and :func:`drifttui.tui.app.run_app`.
"""
