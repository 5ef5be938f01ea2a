"""Test helpers shipped with drifttui (no torch at import): results recorded from the real engine
and a replaying fake engine (``replay``), and the ``drift_check`` pytest fixture (``pytest_plugin``,
registered through the ``pytest11`` entry point)."""
