"""`--model-explorer PATH` (issue 35 item 2): Google Model Explorer node data per ONNX node (error /
tolerance of its layer's output, its own error / tolerance, its status), built with Model
Explorer's own node-data builder and read back the way Model Explorer reads it."""
from __future__ import annotations

import json
import os

import onnx
import pytest

from tests.ci.conftest import classifier_args, run_cli

ndb = pytest.importorskip("model_explorer.node_data_builder", reason="pip install 'drifttui[overlay]'")


@pytest.fixture(scope="module")
def overlay(variants, tmp_path_factory):
    path = tmp_path_factory.mktemp("me") / "drift.json"
    run = run_cli(classifier_args(variants, "flip", "--model-explorer", str(path)))
    assert run.code == 1, run.err
    return run, path


def _load(path):
    """As Model Explorer's web app does (getNodeDataProviderData): a file whose top level has
    `results` (and no results.results) is one graph's node data, applied to the graph on screen;
    its entries parse as the builder's dataclasses."""
    from dacite import from_dict

    raw = json.loads(path.read_text())
    assert raw.get("results") is not None and "results" not in raw["results"]
    data = from_dict(data_class=ndb.GraphNodeData, data=raw)
    built = json.loads(data.to_json_string())
    assert {k: built[k] for k in raw} == raw                    # nothing the builder does not know
    assert "showExpandedSummaryOnGroupNode" not in raw           # its false unselects the origin (0.1.34)
    return data


def test_the_overlay_colours_the_origin_nodes_over_and_the_nodes_before_within(overlay, variants):
    run, path = overlay
    nodes = {n.name: n for n in onnx.load(variants["flip"]).graph.node}
    acc = _load(path)
    own = _load(path.with_name("drift.own.json"))
    status = _load(path.with_name("drift.status.json"))
    assert set(acc.results) <= set(nodes) and acc.results            # keys are the file's node names
    origin = [k for k, r in status.results.items() if r.value == 3]
    linear = [name for name, n in nodes.items() if n.op_type in ("Gemm", "MatMul")]
    assert origin == linear[-1:], origin                                 # fc2: the last of fc1, relu, fc2
    for k in origin:
        assert acc.results[k].value > 1 and own.results[k].value > 1    # over the tolerance, on its own
    within = [k for k, r in status.results.items() if r.value == 0]
    assert within and all(acc.results[k].value <= 1 for k in within if k in acc.results)
    assert [t.value for t in acc.thresholds][2] == 1.0                   # the tolerance is the line
    assert "model-explorer" in run.err and "--node_data_paths=" in run.err and str(path) in run.err


def test_model_explorer_config_takes_the_files(overlay, variants):
    from model_explorer.config import ModelExplorerConfig

    _, path = overlay
    config = ModelExplorerConfig().add_model_from_path(variants["flip"]).add_node_data_from_path(str(path))
    assert str(path) in json.dumps(config.node_data_sources) and "nodeData" in __import__("urllib.parse").parse \
        .unquote(config.to_url_param_value())


def test_refuses_to_overwrite_an_input(variants, tmp_path):
    flip = variants["flip"]
    run = run_cli(classifier_args(variants, "flip", "--model-explorer", flip))
    assert run.code == 2 and "is an input of this run" in run.err


def test_model_explorers_onnx_adapter_gives_the_nodes_the_overlay_names(overlay, variants):
    """`model-explorer model.onnx --extensions=model_explorer_onnx --node_data_paths=...` (the
    command the docs and stderr give): the ONNX adapter's graph holds a node for every key of the
    overlay, the origin's included, so every value colours a node on screen."""
    adapter = pytest.importorskip("model_explorer_onnx.main", reason="pip install 'drifttui[overlay]'")
    _, path = overlay
    graphs = adapter.ONNXAdapter().convert(variants["flip"], {})["graphs"]
    ids = {n.id for g in graphs for n in g.nodes}
    status = _load(path.with_name("drift.status.json"))
    for kind in ("drift.json", "drift.own.json", "drift.status.json"):
        assert set(_load(path.with_name(kind)).results) <= ids, kind
    assert any(r.value == 3 for k, r in status.results.items() if k in ids)     # the origin is on the graph


def test_the_run_says_where_the_origin_is_in_model_explorer(overlay, variants):
    """(fourth pass) Model Explorer opened collapsed on main_graph: the run names the origin's ONNX
    node for its search box, and prints the page that opens with that node selected (the ``data``
    URL parameter the shipped web app decodes: models, nodeData, uiState.paneStates[].selectedNodeId)."""
    from pathlib import Path
    from urllib.parse import parse_qs, urlparse

    import model_explorer

    run, path = overlay
    status = _load(path.with_name("drift.status.json"))
    origin = [k for k, r in status.results.items() if r.value == 3]
    line = next(line for line in run.err.splitlines() if "search box" in line)
    assert line.endswith(": " + ", ".join(origin)), line
    url = next(w for w in run.err.split() if w.startswith("http://localhost:"))
    data = json.loads(parse_qs(urlparse(url).query)["data"][0])
    assert data["models"] == [{"url": os.path.abspath(variants["flip"])}]
    assert data["nodeData"] == [str(path), str(path.with_name("drift.own.json")), str(path.with_name("drift.status.json"))]
    assert data["uiState"]["paneStates"][0]["selectedNodeId"] == origin[0]
    app = "".join(p.read_text(errors="replace") for p in (Path(model_explorer.__file__).parent / "web_app").glob("main-*.js"))
    assert "this.uiState=s.uiState" in app and "selectedNodeId" in app     # what the web app reads from ?data=


def test_an_example_run_writes_the_file_it_compared_beside_the_node_data(tmp_path):
    """(fifth pass) Without --onnx drifttui exports the model into a temp dir that is gone after the
    run: the graph the node data names is written as PATH's .onnx sibling, and the link opens it."""
    from urllib.parse import parse_qs, urlparse

    path = tmp_path / "drift.json"
    run = run_cli(["check", "--example", "unet-resize", "--samples", "2", "--model-explorer", str(path)])
    assert run.code == 1, run.err
    model = tmp_path / "drift.onnx"
    names = {n.name for n in onnx.load(str(model)).graph.node}
    status = _load(tmp_path / "drift.status.json")
    assert set(status.results) <= names and any(r.value == 3 for r in status.results.values())
    assert f"model-explorer {model} " in run.err
    url = next(w for w in run.err.split() if w.startswith("http://localhost:"))
    assert json.loads(parse_qs(urlparse(url).query)["data"][0])["models"] == [{"url": str(model)}]
