"""--max-memory bounds the whole process: the fixed costs are counted, the default comes from the
machine's available memory, and a limit below the fixed costs is said, not silently broken."""
import pytest
import torch

from drifttui.cli import main
from tests.conftest import model_spec


@pytest.fixture(autouse=True)
def intermediates_only_budget():
    """Overrides tests/capture/conftest.py: here the real fixed costs are counted."""
    yield


@pytest.fixture(scope="module")
def mlp_index(tmp_path_factory):
    from drifttui.core.model.loading import load_onnx
    from drifttui.core.onnx.graph import build_index

    d = tmp_path_factory.mktemp("mlp")
    m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 8)).eval()
    path = d / "mlp.onnx"
    torch.onnx.export(m, (torch.randn(1, 256),), str(path), dynamo=False)
    proto, path = load_onnx(path)
    return build_index(proto, path)


def test_weight_bytes_counts_every_initializer(mlp_index):
    from drifttui.core.prepare.budget import weight_bytes

    assert weight_bytes(mlp_index) == 4 * (256 * 512 + 512 + 512 * 8 + 8)


def test_fixed_costs_hold_the_process_and_one_copy_of_the_weights(mlp_index, monkeypatch):
    """The output session packs from the file (raw weights freed) while the shared mapping's pages
    are given back, and it is closed before the worst samples' passes: one copy, never two."""
    from drifttui.core.prepare import budget

    assert budget.rss_bytes() > 0
    monkeypatch.setattr(budget, "rss_bytes", lambda: 1 << 30)
    assert budget.fixed_bytes(mlp_index) == (1 << 30) + budget.weight_bytes(mlp_index) + budget.MARGIN


def test_a_limit_leaves_the_rest_to_the_intermediates(mlp_index):
    from drifttui.core.prepare.budget import plan_budget

    b = plan_budget(64 << 30, mlp_index, hooked=True)
    assert b.given and b.limit == 64 << 30
    assert b.activations == b.limit - b.fixed and b.activations > 0
    assert b.notes == []


def test_a_limit_below_the_fixed_costs_is_said(mlp_index):
    from drifttui.core.prepare.budget import plan_budget

    b = plan_budget(1 << 20, mlp_index, hooked=True)
    assert b.activations == 1
    assert len(b.notes) == 1 and "below what this run holds" in b.notes[0]


def test_the_default_budget_comes_from_the_available_memory(mlp_index):
    from drifttui.core.prepare import budget

    avail = budget.available_bytes()
    if avail is None:
        pytest.skip("no /proc/meminfo here")
    b = budget.plan_budget(None, mlp_index, hooked=True)
    assert not b.given
    assert b.limit == pytest.approx(budget.rss_bytes() + budget.DEFAULT_SHARE * avail, rel=0.05)
    note = budget.window_note(b, 3, 1 << 20)
    assert "of the memory available at start" in note and "--max-memory sets it" in note


def test_cli_names_a_limit_it_cannot_hold(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["check", model_spec("twice"), "--inputs", "shape:2x8", "--samples", "2", "--max-memory", "1M",
                 "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    import json

    notes = json.loads(out.read_text())["notes"]
    assert any("--max-memory 1.0 MiB is below what this run holds" in n for n in notes), notes
