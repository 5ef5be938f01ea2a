"""Modal screens of the drifttui TUI."""
