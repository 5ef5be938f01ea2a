"""The TUI's error modal for inputs that do not fit the graph (issue 23 item 16): it names the
expected and the given shape.  The real engine (LocalEngine) on a real export."""
from __future__ import annotations


from tests.engine.test_shape_mismatch import MODEL, onnx_16  # noqa: F401  (the module-scoped export)


async def test_the_tui_error_modal_shows_the_expected_and_the_given_shape(onnx_16):  # noqa: F811
    from drifttui.api import LocalEngine
    from drifttui.core.result import Config
    from drifttui.tui.app import DriftApp
    from drifttui.tui.screens.error import ErrorScreen
    from tests.tui.conftest import wait_until

    config = Config(model=MODEL, onnx=onnx_16, inputs="shape:1x3x32x32", samples=1)
    app = DriftApp(LocalEngine(), config=config)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen), timeout=240)
        await pilot.pause()
        message = app.screen.message
        shown = " ".join(str(app.screen.query_one("#error-message").render()).split())
    assert "the graph expects 1x3x16x16 float32, the inputs give 1x3x32x32 float32" in message
    assert "the graph expects 1x3x16x16 float32, the inputs give 1x3x32x32 float32" in shown
