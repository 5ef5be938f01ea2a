"""Widgets of the drifttui TUI."""
