"""The TUI shows the torch op a finding's drift starts in (``Finding.torch_op``, issue 30 point 3), read from the
result: the inspector's findings and the step detail's finding, never from torch."""
from __future__ import annotations

import dataclasses

from rich.console import Console

from drifttui.tui.app import DriftApp
from drifttui.tui.step_view import finding_renderable


def _with_op(result):
    head = dataclasses.replace(result.findings[0], torch_op="torch.Tensor.var", aten_op="aten.var.correction")
    return result.with_(findings=[head, *result.findings[1:]])


async def test_the_inspector_names_the_torch_op_of_the_origin_s_finding(result):
    named = _with_op(result)
    app = DriftApp(None, result=named)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.table.go_to_layer(named.drift_origin.layer)
        await pilot.pause()
        said = " ".join(app.inspector.text.split())            # the narrow inspector wraps the line
        assert "torch op: torch.Tensor.var (aten.var.correction)" in said, said


def test_the_step_detail_names_it_and_says_nothing_when_it_is_unknown(result):
    def text(f):
        console = Console(width=120, record=True)
        console.print(finding_renderable(f, headline=True))
        return console.export_text()

    assert "torch op: torch.Tensor.var (aten.var.correction)" in text(_with_op(result).findings[0])
    assert "torch op" not in text(result.findings[0])
