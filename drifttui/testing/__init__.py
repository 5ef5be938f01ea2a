"""Test helpers shipped with drifttui: synthetic results (no torch) and the ``drift_check``
pytest fixture (``pytest_plugin``, registered through the ``pytest11`` entry point)."""
