"""Both stories in the TUI's status line (issue 33 4c): a reduced-precision file whose origin is a genuine
drift says, after the origin, the layer its precision story starts at (Result.precision_origin, decided
in core decide); a report without one (every recorded fixture) says nothing more."""
from __future__ import annotations

import dataclasses

from drifttui.tui.app import DriftApp


async def test_status_line_names_the_precision_origin_beside_the_drift(result):
    assert result.verdict == "drift" and result.precision_origin is None
    other = next(L for L in result.layers if L.index != result.drift_origin.layer and L.module)
    both = result.with_(precision_origin=dataclasses.replace(result.drift_origin, layer=other.index,
                                                              module=other.module))
    for r, said in ((result, False), (both, True)):
        app = DriftApp(None, result=r)
        async with app.run_test(size=(160, 24)) as pilot:
            await pilot.pause()
            line = app.status.first_line().plain
            assert ("also over budget from " + other.module in line) == said, line
