"""drifttui's hooks do not change what torch computes: a module that inspects its own hooks to choose its path
(``nn.TransformerEncoderLayer`` leaves its fused fast path when ``_forward_hooks`` is not empty, and that path
reads a float attention mask as a boolean one) computes under observation what the plain forward computes: prepare
finds that the hooked forward computes otherwise and routes the hooks globally (``Hooks.routed``); where both paths
agree, the hooks stay on the modules and the slow path's submodules are compared one by one."""
import pytest
import torch
from torch import nn

from drifttui.core.runtime.torch_hooks import Hooks, TensorStore


class _Biased(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        pos = torch.arange(4)
        self.register_buffer("bias", -0.25 * (pos[None, :] - pos[:, None]).abs().float())   # ALiBi: 0 on the diagonal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x, src_mask=self.bias)


def test_the_hooked_forward_computes_what_the_plain_forward_computes():
    m = _Biased().eval()
    x = torch.randn(2, 4, 16)
    with torch.no_grad():
        plain = m(x)
        torch.backends.mha.set_fastpath_enabled(False)
        slow = m(x)
        torch.backends.mha.set_fastpath_enabled(True)
    assert (plain - slow).abs().max() > 0.05, "the fast path and the slow path must differ for this to test anything"
    hooks = Hooks(m, routed=True)
    with hooks.installed():
        assert not any(len(k._forward_hooks) + len(k._forward_pre_hooks) for k in m.modules())
        hooks.begin(None, tracing=True)
        with torch.no_grad():
            m(x)
        layer = next(c.index for c in hooks.calls if c.module == "layer")
        store = TensorStore({layer: [0]}, {layer: [0, 1]})
        hooks.begin(store)
        with torch.no_grad():
            observed = m(x)
    assert torch.equal(observed, plain)
    assert torch.equal(store.out[(layer, 0)], plain)
    # the keyword argument reaches the pre-hook (the mask is the layer's second input) ...
    assert torch.equal(store.inp[(layer, 1)], m.bias)
    # ... and the fast path calls none of the layer's children: torch's own computation is the layer's
    assert [c.module for c in hooks.calls] == ["", "layer"]


def test_the_hooks_leave_nothing_behind():
    m = _Biased().eval()
    hooks = Hooks(m, routed=True)
    before = (len(torch.nn.modules.module._global_forward_hooks),
              len(torch.nn.modules.module._global_forward_pre_hooks))
    with hooks.installed():
        pass
    after = (len(torch.nn.modules.module._global_forward_hooks), len(torch.nn.modules.module._global_forward_pre_hooks))
    assert after == before
    assert all(not k._forward_pre_hooks_with_kwargs for k in m.modules())
    # a module of another model run while the hooks are installed is not recorded
    other = nn.Linear(3, 3)
    with hooks.installed():
        hooks.begin(None, tracing=True)
        other(torch.randn(1, 3))
    assert hooks.calls == []


@pytest.mark.parametrize("routed", [False, True])
def test_a_module_with_a_hook_of_its_own_is_recorded_after_it(routed):
    """A user's forward hook that replaces a module's output: drifttui records the output the parent receives."""
    m = _Biased().eval()
    m.layer.linear2.register_forward_hook(lambda mod, args, out: out * 0 + 7.0)
    hooks = Hooks(m, routed=routed)
    x = torch.randn(2, 4, 16)
    with hooks.installed():
        hooks.begin(None, tracing=True)
        with torch.no_grad():
            m(x)
        lin = next(c.index for c in hooks.calls if c.module == "layer.linear2")
        store = TensorStore({lin: [0]}, {})
        hooks.begin(store)
        with torch.no_grad():
            m(x)
    assert torch.all(store.out[(lin, 0)] == 7.0)


class _Unbiased(_Biased):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


def test_prepare_routes_the_hooks_only_where_observation_changes_the_outputs(tmp_path):
    """The ALiBi layer computes otherwise under per-module hooks: the run routes them globally and says so, and the
    fast path's submodules are not compared; the same layer without the float mask computes the same either way:
    the hooks stay on the modules and every submodule of the slow path is compared."""
    import drifttui

    notes, compared = {}, {}
    for name, model in (("biased", _Biased().eval()), ("plain", _Unbiased().eval())):
        r = drifttui.check(model, inputs=torch.randn(2, 4, 16), samples=2)
        notes[name] = [n for n in r.notes if "carry forward hooks" in n]
        compared[name] = {L.module for L in r.layers if L.status not in ("unmapped", "not_exported")}
    assert len(notes["biased"]) == 1 and notes["plain"] == []
    assert "layer.linear2" in compared["plain"] and "layer.linear2" not in compared["biased"]


def test_only_a_model_whose_module_reads_its_hooks_gets_the_plain_forward_check():
    from drifttui.core.prepare.hook_routing import inspects_hooks

    assert inspects_hooks(_Biased()) and not inspects_hooks(nn.Sequential(nn.Linear(3, 3), nn.ReLU()))
