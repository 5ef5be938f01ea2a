"""Test helpers shipped with drifttui: results recorded from the real engine and a replaying fake engine; no torch."""
