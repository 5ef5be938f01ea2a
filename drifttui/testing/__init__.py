"""Test helpers shipped with drifttui (synthetic results); no torch."""
