"""Every key of the TUI, in one place: the help screen and docs/tui.md list these."""
from __future__ import annotations

KEYMAP: list[tuple[str, list[tuple[str, str]]]] = [
    ("Layer table", [
        ("↑ ↓  k j", "move the cursor (the inspector follows)"),
        ("PgUp PgDn Home End", "page / first / last row"),
        ("← →", "collapse / expand a module (← on a leaf goes to its parent)"),
        ("Space Enter", "toggle expand/collapse"),
        ("E  C", "expand all / collapse all"),
        ("g", "jump to the drift origin ◆"),
        ("/", "filter rows by module or class name (Enter keeps, Esc clears)"),
        ("f", "show only drifting or inherited rows (toggle)"),
        ("i", "show / hide the inspector"),
        ("Tab", "move focus to the inspector (then ↑ ↓ scroll it)"),
    ]),
    ("Debugging steps", [
        ("1 … 6", "run (or show) step N; pressing the shown step again reruns it"),
        ("n  p", "next / previous step"),
        ("l", "move the cursor to the layer(s) the step names (again: the next one)"),
    ]),
    ("Rerun capture (in the background)", [
        ("d", "determinism on/off"),
        ("o", "cycle ORT optimisation level: disable → basic → extended → all"),
        ("+  -", "tolerance ×10 / ÷10 (atol and rtol)"),
        ("z", "zero input on/off"),
        ("r", "rerun with the current configuration"),
        ("x", "cancel the running capture"),
    ]),
    ("App", [
        ("?", "this help"),
        ("q", "quit"),
    ]),
]
