"""``--model-explorer PATH``: node data for Google Model Explorer, so the error shows as colours on
the ONNX graph (``model-explorer model.onnx --extensions=model_explorer_onnx --node_data_paths=...``).

Three files, one value per ONNX node (the node's owning module call, as the layer table maps it):

* ``PATH``               error / tolerance of the layer's output (accumulated: what flows out of it);
* ``<stem>.own<ext>``    error / tolerance of the layer's own nodes fed from torch (own error);
* ``<stem>.status<ext>`` 0 ok, 1 inherited, 2 drift, 3 the origin (other statuses: no value).

"Tolerance" is the layer's allowance (report/profile.py: the tolerance rule at its scale, or its
precision budget); 1 is the line, and the thresholds colour it the way the text report's profile
does.  Built with Model Explorer's own node-data builder (``model_explorer.node_data_builder``,
the optional extra ``drifttui[overlay]``): a GraphNodeData of NodeDataResult keyed by ONNX node
name (the node ids the ONNX adapter gives), with the thresholds that colour them.
"""
from __future__ import annotations

import json
import os
from typing import Any, Optional
from urllib.parse import quote

from drifttui.core.result import DRIFT, INHERITED, OK, Result
from drifttui.errors import InputError
from drifttui.report.profile import allowance, ratio

# error / allowance: within (greens), over (orange to dark red)
RATIO_THRESHOLDS = [(0.01, "#388e3c"), (0.1, "#8bc34a"), (1.0, "#c8e6c9"), (10.0, "#ffa000"), (1000.0, "#ff5722"),
                    (1e300, "#b71c1c")]
STATUS_CODES = {OK: 0, INHERITED: 1, DRIFT: 2}
STATUS_THRESHOLDS = [(0, "#8bc34a"), (1, "#ffa000"), (2, "#d32f2f"), (3, "#ff3d9a")]
# what the side panel names each file by; its node info cuts a name after ~18 characters at 1280
# pixels, so what tells them apart comes first
NAMES = {"accumulated": "error/tol output", "own": "error/tol own",
         "status": "status 3=origin 2=drift 1=inherited 0=ok"}


def builder() -> Any:
    try:
        from model_explorer import node_data_builder  # the optional extra drifttui[overlay]
    except ImportError as exc:
        raise InputError("--model-explorer needs Model Explorer's node-data builder (not installed)",
                         "pip install 'drifttui[overlay]' (ai-edge-model-explorer)") from exc
    return node_data_builder


def paths(path: str) -> dict[str, str]:
    """The three files ``--model-explorer PATH`` writes: accumulated (PATH), own, status."""
    stem, ext = os.path.splitext(path)
    ext = ext or ".json"
    return {"accumulated": path, "own": f"{stem}.own{ext}", "status": f"{stem}.status{ext}"}


def export_path(path: str) -> str:
    """Where ``--model-explorer PATH`` writes the ONNX file drifttui exported itself: PATH's
    ``.onnx`` sibling (the node data names its nodes, so the graph must be the one compared)."""
    return os.path.splitext(path)[0] + ".onnx"


def node_values(result: Result) -> dict[str, dict[str, float]]:
    """kind -> ONNX node name -> value, for the nodes of every compared layer."""
    out: dict[str, dict[str, float]] = {"accumulated": {}, "own": {}, "status": {}}
    origin = result.drift_origin.layer if result.drift_origin is not None else None
    for L in result.layers:
        r = ratio(result, L)
        allowed = allowance(result, L)
        own = (L.local.max_abs.worst / allowed if L.local is not None and allowed else None)
        status = 3 if L.index == origin else STATUS_CODES.get(L.status)
        for node in L.onnx_nodes:
            if r is not None:
                out["accumulated"][node] = _finite(r)
            if own is not None:
                out["own"][node] = _finite(own)
            if status is not None:
                out["status"][node] = status
    return out


def _finite(x: float) -> float:
    """JSON has no NaN or Infinity; four significant digits are what the side panel can show (all
    of them when rounding would move the value across a threshold: 1.00004 stays over the line)."""
    if x != x or x == float("inf"):
        return 1e300
    r = float(f"{x:.4g}")
    return x if any((x <= t) != (r <= t) for t, _ in RATIO_THRESHOLDS) else r


# The builder writes every field of GraphNodeData, this one as false.  Model Explorer 0.1.34's web
# app compares it with the empty run it had before the file arrived (undefined !== false) and lays
# the graph out again with no node selected: the link's selection of the origin (uiState) was lost
# whenever the node data came before the first layout.  Left out, it is false all the same.
_DROPPED = ("showExpandedSummaryOnGroupNode",)


def _json(data: Any) -> str:
    raw = json.loads(data.to_json_string())
    for key in _DROPPED:
        if raw.get(key) is False:
            del raw[key]
    return json.dumps(raw, indent=1)


def render(result: Result) -> dict[str, str]:
    """kind -> the JSON text of its node-data file: one GraphNodeData, which Model Explorer's loader
    applies to the graph on screen (a file keyed by graph id would have to guess the id the ONNX
    adapter gives the graph)."""
    ndb = builder()
    out = {}
    for kind, values in node_values(result).items():
        steps = STATUS_THRESHOLDS if kind == "status" else RATIO_THRESHOLDS
        data = ndb.GraphNodeData(results={n: ndb.NodeDataResult(value=v) for n, v in values.items()},
                                 name=NAMES[kind],
                                 thresholds=[ndb.ThresholdItem(value=v, bgColor=c) for v, c in steps])
        out[kind] = _json(data)
    return out


def origin_nodes(result: Result) -> list[str]:
    """The origin's ONNX node names (what its row in the layer table names), or none."""
    o = result.drift_origin
    return list(result.layers[o.layer].onnx_nodes) if o is not None and 0 <= o.layer < len(result.layers) else []


def origin_url(result: Result, onnx_path: str, files: dict[str, str], port: int = 8080) -> Optional[str]:
    """The Model Explorer page that opens ``onnx_path`` with the node data and the origin's first
    node selected: its ``data`` URL parameter (the web app's decodeUrl: models, nodeData,
    nodeDataTargets and a uiState whose pane selects a node), for a server started with
    ``--no_open_in_browser``.  The web app expands the layers that hold the selected node, zooms
    to it and shows its node data in the side panel (tests/ci/test_model_explorer_browser.py opens
    it in Chromium).  None without an origin."""
    nodes = origin_nodes(result)
    if not nodes:
        return None
    data = {"models": [{"url": os.path.abspath(onnx_path)}],
            "nodeData": [os.path.abspath(p) for p in files.values()],
            "nodeDataTargets": ["" for _ in files],       # as the model-explorer command's own URL has it
            "uiState": {"paneStates": [{"deepestExpandedGroupNodeIds": [], "selectedNodeId": nodes[0],
                                        "selectedGraphId": "", "selectedCollectionLabel": "",
                                        "widthFraction": 1}]}}
    return f"http://localhost:{port}/?data={quote(json.dumps(data))}"
