"""The two runtimes as primitives the stages share: ONNX Runtime sessions with marked outputs
(sessions.py), torch forward hooks that see each module call's outputs at hook time (torch_hooks.py), and
the guarded torch forward (guards.py)."""
