from drifttui.cli import entry

entry()
