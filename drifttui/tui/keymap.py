"""Every key and action of the TUI, in one place.

The app's bindings, the command palette (ctrl+p), the footer, the help screen and
docs/tui.md all come from :data:`ACTIONS`; :data:`STATUS_HELP` and :data:`COLUMN_HELP`
explain what the table shows.
"""
from __future__ import annotations

from dataclasses import dataclass

from drifttui.core.result import DRIFT, FUSED, INHERITED, NOT_EXPORTED, OK, UNATTRIBUTED, UNMAPPED


@dataclass(frozen=True)
class Action:
    section: str
    keys: str          # Textual key names, comma-separated ("" = handled by a widget)
    shown: str         # how the key is written for people
    action: str        # app action ("" = widget-level, listed for help only)
    title: str         # short name (footer, palette)
    help: str          # one line (help screen, palette)
    footer: bool = False


TABLE, DETAIL, STEPS, RERUN, APP = ("Layer table", "Details and copying", "Debugging steps",
                                    "Reruns (in the background)", "App")
SERVED = "Served model, pipeline, tolerance"

ACTIONS: list[Action] = [
    Action(TABLE, "", "↑ ↓  k j", "", "Move", "move the cursor (the inspector follows)"),
    Action(TABLE, "", "PgUp PgDn Home End", "", "Page", "page / first / last row"),
    Action(TABLE, "", "← →", "", "Fold", "collapse / expand a module (← on a leaf goes to its parent)"),
    Action(TABLE, "", "Space", "table('toggle')", "Toggle", "expand / collapse the module under the cursor"),
    Action(TABLE, "", "E", "table('expand_all')", "Expand all", "expand every module"),
    Action(TABLE, "", "C", "table('collapse_all')", "Collapse all", "collapse everything below the top level"),
    Action(TABLE, "g", "g", "origin", "Origin", "jump to the drift origin ◆", footer=True),
    Action(TABLE, "slash", "/", "filter", "Filter", "filter rows by module or class name (Enter keeps, Esc clears)",
           footer=True),
    Action(TABLE, "f", "f", "only_drift", "Drifting only", "show only drift / inherited / unattributed rows (toggle)"),
    Action(TABLE, "escape", "Esc", "clear_filter", "Clear filter", "clear a kept filter (the / name and f)"),
    Action(TABLE, "ctrl+f", "ctrl+f", "search", "Search", "search a module or class name and jump to it"),
    Action(TABLE, "right_square_bracket", "]", "search_move(1)", "Next match", "jump to the next search match"),
    Action(TABLE, "left_square_bracket", "[", "search_move(-1)", "Previous match",
           "jump to the previous search match"),
    Action(TABLE, "w", "w", "sort", "Sort", "sort siblings: tree order → worst local → worst abs → worst 1-cos"),
    Action(TABLE, "i", "i", "toggle_inspector", "Inspector", "show / hide the inspector pane"),
    Action(DETAIL, "enter", "Enter", "layer_detail", "Layer detail",
           "the layer's drill-down (error per channel, per sample) and full detail on its own screen",
           footer=True),
    Action(DETAIL, "", "a", "", "All samples",
           "on a layer detail: compare the layer on every sample of the run, in the background (Esc cancels)"),
    Action(DETAIL, "s", "s", "step_detail", "Step detail",
           "the shown step's full result: summary, evidence, verified cause, patch, fix", footer=True),
    Action(DETAIL, "c", "c", "copy_module", "Copy module", "copy the module name under the cursor (OSC 52)"),
    Action(DETAIL, "Y", "Y", "copy_nodes", "Copy node names", "copy the layer's ONNX node name(s) (OSC 52)"),
    Action(DETAIL, "y", "y", "copy_fix", "Copy fix", "copy the shown step's fix (or the headline finding's) (OSC 52)"),
    Action(DETAIL, "ctrl+s", "ctrl+s", "save_json", "Save JSON", "save the result on screen as a JSON report"),
    Action(DETAIL, "ctrl+t", "ctrl+t", "save_svg", "Save SVG", "save the screen as an SVG picture"),
    *[Action(STEPS, str(n), str(n), f"step({n})", f"Step {n}",
             f"run (or show) step {n}; pressing the shown step again reruns it") for n in range(1, 7)],
    Action(STEPS, "n", "n", "step_move(1)", "Next step", "show the next step"),
    Action(STEPS, "p", "p", "step_move(-1)", "Previous step", "show the previous step"),
    Action(STEPS, "l", "l", "step_layers", "Step layers",
           "move the cursor to the layer(s) the shown step names (again: the next one)"),
    Action(RERUN, "d", "d", "determinism", "Determinism", "capture again with determinism on/off"),
    Action(RERUN, "o", "o", "opt_level", "Opt level", "rerun at the next ORT level: disable → basic → extended → all"),
    Action(RERUN, "plus", "+", "tolerance(10)", "Tolerance ×10", "atol and rtol ×10: re-decides the capture on screen (no new capture)"),
    Action(RERUN, "minus", "-", "tolerance(0.1)", "Tolerance ÷10", "atol and rtol ÷10: re-decides the capture on screen (no new capture)"),
    Action(RERUN, "z", "z", "zero_input", "Zero input", "rerun with zero input on/off"),
    Action(RERUN, "r", "r", "rerun", "Rerun", "rerun with the configuration on screen", footer=True),
    Action(RERUN, "x", "x", "cancel", "Cancel", "cancel the running capture or step (the result on screen stays)"),
    Action(SERVED, "v", "v", "served", "Served / outputs",
           "the served model (Triton): verdict, the file's and the served outputs side by side, config, cost"),
    Action(SERVED, "b", "b", "bisect", "Stage bisect",
           "which file of --stages first drifts, its origin, cause and pass (runs in the background)"),
    Action(SERVED, "a", "a", "advise_tolerance", "Advised tolerance",
           "the noise floor per output and layer, the advised atol/rtol vs the current (in the background)"),
    Action(APP, "T", "T", "toggle_theme", "Light/dark", "switch between the dark and the light theme"),
    Action(APP, "question_mark", "?", "help", "Help", "every key, status and column", footer=True),
    Action(APP, "ctrl+p", "ctrl+p", "command_palette", "Commands", "find any action by name"),
    Action(APP, "q,ctrl+c", "q  ctrl+c", "quit", "Quit", "quit at once (a running capture is cancelled)",
           footer=True),
]

STATUS_HELP: list[tuple[str, str]] = [
    (OK, "its output matches within the tolerance"),
    (DRIFT, "its own computation fails the tolerance (local error too): the error is made here"),
    (INHERITED, "its output is off only because its inputs are: its own nodes are fine"),
    (UNATTRIBUTED, "fails the tolerance, but neither its own nodes nor an earlier module own the error "
                   "(e.g. float32 noise upstream flipping a rounding); the note says why"),
    (FUSED, "the exporter merged it into a neighbour's node (e.g. Conv+BatchNorm): no value of its own"),
    (NOT_EXPORTED, "it left no node in the graph (identity, dropout, folded away)"),
    (UNMAPPED, "it has nodes, but no ONNX value could be paired with its output"),
]

COLUMN_HELP: list[tuple[str, str]] = [
    ("◆", "the drift origin: the first module whose own computation fails the tolerance"),
    ("◇", "a collapsed module with the drift origin inside (→ or g opens it)"),
    ("module", "name, indented by depth; ▾ expanded, ▸ collapsed; #1 a second call; (root) the model"),
    ("class / onnx ops", "the module's class and its ONNX op types (wide terminals)"),
    ("abs", "worst max |torch - onnx| over samples, against atol"),
    ("rel", "worst max relative error (to the layer's scale), against rtol"),
    ("local", "the module's OWN error: its ONNX nodes run on the PyTorch-side inputs, against atol"),
    ("1-cos", "worst 1 - cosine similarity of the outputs, against max(rtol²/2, 1e-6)"),
]


def bindings_spec() -> list[tuple[str, str, str, bool]]:
    """(keys, action, title, show) of every app-level binding."""
    return [(a.keys, a.action, a.title, a.footer) for a in ACTIONS if a.keys and a.action
            and a.action != "command_palette"]


def palette_entries() -> list[Action]:
    return [a for a in ACTIONS if a.action and a.action != "command_palette"]


# The footer: the keys of the focused pane (the table's come from ACTIONS' footer flags).
PANE_KEYS: dict[str, list[tuple[str, str]]] = {
    "inspector": [("↑↓ PgUp PgDn", "scroll"), ("Tab/Esc", "back to the table"), ("Enter", "Layer detail"),
                  ("i", "hide"), ("?", "Help"), ("q", "Quit")],
    "filter": [("type", "a module or class name"), ("Enter", "keep the filter"), ("Esc", "clear it"),
               ("Tab", "back to the table")],
}


# the same keys in short forms: what fits 80 columns (the long forms were cut at "back to th…")
PANE_SHORT: dict[str, list[tuple[str, str]]] = {
    "inspector": [("↑↓ PgUp PgDn", "scroll"), ("Tab/Esc", "table"), ("Enter", "detail"), ("i", "hide"),
                  ("?", "Help"), ("q", "Quit")],
    "filter": [("type", "a name"), ("Enter", "keep"), ("Esc", "clear"), ("Tab", "table")],
}


def footer_keys(pane: str, short: bool = False) -> list[tuple[str, str]]:
    """(key as written, title) pairs the footer shows while ``pane`` has the focus (``short``:
    the forms that fit 80 columns)."""
    if pane in PANE_KEYS:
        return (PANE_SHORT if short else PANE_KEYS)[pane]
    titles = SHORT_TITLES if short else {}
    return [(a.shown.split()[0], titles.get(a.title, a.title)) for a in ACTIONS if a.footer] + \
        [("^p", titles.get("Commands", "Commands"))]


# the table's footer titles in short forms (60 columns: "? Help" and "q Quit" were cut off)
SHORT_TITLES = {"Layer detail": "Detail", "Step detail": "Step", "Commands": "Cmds"}
