"""The origin module as it was called (``locate/call_structure.py``, session 27): a module a library calls with
keyword arguments, tuples and options is re-exported and traced through a wrapper that puts the captured flat
input tensors back where the call had them.  Without it the re-export of such a module fails (``forward() got
an unexpected positional argument``) or binds the tensors to the wrong parameters, and no patch is tried
(forms38's Llama, Qwen2 and Mistral attention modules on their first run: "no patch among 0 tried")."""
from __future__ import annotations

import pytest
import torch

from drifttui.core.explain.causes.locate.call_structure import AsCalled


class _Takes(torch.nn.Module):
    def forward(self, hidden, position_embeddings, mask=None, scale=1.0, flag=False):
        cos, sin = position_embeddings
        out = hidden * cos + sin * scale
        return (out.masked_fill(mask, 0.0) if mask is not None else out), None


def test_the_wrapper_puts_the_flat_tensors_back_where_the_call_had_them():
    torch.manual_seed(0)
    h, c, s = torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 4)
    m = torch.zeros(2, 4, dtype=torch.bool)
    m[0, 1] = True
    args, kwargs = (h,), {"position_embeddings": (c, s), "mask": m, "scale": 0.5, "flag": True}
    wrapped = AsCalled(_Takes(), args, kwargs)
    other = [torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 4), m]       # the flat order: h, cos, sin, mask
    got = wrapped(*other)
    want = _Takes()(other[0], (other[1], other[2]), mask=m, scale=0.5)[0]
    assert len(got) == 1 and torch.equal(got[0], want)        # the None output dropped, as the capture does
    ep = torch.export.export(wrapped, tuple(other), strict=False)      # traceable on the flat inputs
    assert torch.equal(ep.module()(*other)[0], want)


class _Dropped(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj, self.drop = torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)

    def forward(self, hidden, mask=None):
        return self.drop(self.proj(hidden)).masked_fill(mask, 0.0)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_re_export_leaves_the_users_modules_in_eval_mode(tmp_path, exporter):
    """The origin's re-export through the wrapper leaves the user's model as it found it: the TorchScript
    exporter put the module back in the wrapper's (training) mode, so GPT-2's attention ran its dropout in every
    later torch forward and no patch held on a fresh sample (forms38's gpt2_leftpad, session 28)."""
    from drifttui.core.model.export import export_model

    torch.manual_seed(0)
    module = _Dropped().eval()
    h, m = torch.randn(2, 4), torch.zeros(2, 4, dtype=torch.bool)
    wrapped = AsCalled(module, (h,), {"mask": m})
    want = module(h, mask=m)
    export_model(wrapped, (h, m), {}, exporter, tmp_path)
    assert not wrapped.training and not any(c.training for c in module.modules())
    with torch.no_grad():
        assert torch.equal(module(h, mask=m), want)       # no dropout: the same values as before the export


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from tests.causes.form_suite import explained_forms

    return explained_forms(tmp_path_factory, "forms38", inputs={"kwargs_caller": "rows"})


def test_a_child_called_with_keywords_is_reexported_as_called_verified_and_repaired(explained):
    from tests.causes.form_suite import assert_verified_and_repaired

    assert_verified_and_repaired(explained, ("kwargs_caller", "torchscript"),
                                 ("lowering", "reexport", {"exporter": "dynamo"}, "body"), "body")


def test_the_verified_reexport_carries_the_other_block_of_its_class(explained):
    """``propose/siblings.py``: the second block runs the same code; its own re-export goes with the origin's
    (without it the repaired file drifts at ``body2``)."""
    *_, exp = explained("kwargs_caller", "torchscript")
    graft = next(t.patch.graft for t in exp.verified if t.patch.spec.get("op") == "reexport")
    assert len(graft.siblings) == 1 and graft.siblings[0].remove and graft.siblings[0].remove != graft.remove


def test_grafted_children_are_rerooted_under_the_origin():
    """``onnx/edit/graft/scopes.py``: a re-export's child scopes ('q_proj', under the wrapper's 'inner') placed
    below the origin's scope in the file, whatever child's node the anchor is."""
    from onnx import helper

    from drifttui.core.onnx.edit.graft.scopes import below, rerooted

    node = helper.make_node("MatMul", ["a", "b"], ["c"], name="node_MatMul_1")
    node.metadata_props.add(key="pkg.torch.onnx.name_scopes", value="['', 'inner', 'inner.q_proj', 'linear']")
    anchor = ['', 'model', 'model.attn', 'model.attn.k_proj', 'linear_7']
    assert rerooted(below(node, "inner"), anchor, "model.attn") == \
        ['', 'model', 'model.attn', 'model.attn.q_proj', 'linear']
    ts = helper.make_node("MatMul", ["a", "b"], ["c"], name="/q_proj/MatMul")      # a TorchScript re-export
    assert rerooted(below(ts, ""), anchor, "model.attn") == ['', 'model', 'model.attn', 'model.attn.q_proj', 'MatMul']


class _Cache:
    """a library cache (transformers' DynamicCache): each call ``update``s it with its own tensors."""

    def __init__(self) -> None:
        self.items: list = []

    def update(self, t: torch.Tensor) -> torch.Tensor:
        self.items.append(t)
        return torch.stack(self.items).sum(0)


class _Cached(torch.nn.Module):
    def forward(self, hidden, cache=None):
        return cache.update(hidden) * 2.0


class _CacheCaller(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = _Cached(), _Cached()

    def forward(self, x):
        cache = _Cache()
        return self.b(self.a(x, cache=cache), cache=cache)


def test_a_stateful_argument_is_taken_as_the_call_found_it():
    """A call that updates a cache it is handed (GPT-2's attention with transformers' default ``use_cache=True``)
    is re-run from the cache as the call found it, each time: the cache recorded after the forward held the
    call's own tensors and the next layer's, so the wrapper's attention read twice the keys and no re-export
    verified ("no patch among 1 tried")."""
    from types import SimpleNamespace

    from drifttui.core.explain.causes.locate.call_structure import as_called
    from drifttui.core.runtime.torch_hooks import Hooks

    torch.manual_seed(0)
    model, x = _CacheCaller().eval(), torch.randn(2, 4)
    hooks = Hooks(model)
    with hooks.installed():
        hooks.begin(None, tracing=True)
        model(x)
        hooks.begin(None)
    calls = hooks.calls

    def new_hooks():
        h = Hooks(model)
        h.calls = calls
        return h

    ctx = SimpleNamespace(model=model, new_hooks=new_hooks, cache={})
    call = next(c.index for c in calls if c.module == "a")
    wrapped = as_called(ctx, call, model.a, ((x,), {}))
    want = model.a(x, cache=_Cache())
    assert torch.equal(wrapped(x)[0], want) and torch.equal(wrapped(x)[0], want)     # every call from that state


def test_a_stateful_argument_holding_tensors_is_exported_through_the_wrapper():
    """The second call's cache already holds the first call's tensor when the call begins: the wrapper copies the
    cache's containers and shares its tensors, so ``torch.export`` (fake tensors, which cannot copy a real one)
    traces it, and every run starts from that state (Llama's second decoder layer under ``use_cache=True``: its
    re-export failed, the layer was not grafted and the repaired file drifted there)."""
    from types import SimpleNamespace

    from drifttui.core.explain.causes.locate.call_structure import as_called
    from drifttui.core.runtime.torch_hooks import Hooks

    torch.manual_seed(0)
    model, x = _CacheCaller().eval(), torch.randn(2, 4)
    hooks = Hooks(model)
    with hooks.installed():
        hooks.begin(None, tracing=True)
        model(x)
        hooks.begin(None)
    calls = hooks.calls

    def new_hooks():
        h = Hooks(model)
        h.calls = calls
        return h

    ctx = SimpleNamespace(model=model, new_hooks=new_hooks, cache={})
    call = next(c.index for c in calls if c.module == "b")
    wrapped = as_called(ctx, call, model.b, ((x,), {}))
    y = torch.randn(2, 4)
    want = (x + y) * 2.0                                   # the first call's x is in the cache, then y
    ep = torch.export.export(wrapped, (y,), strict=False)
    assert torch.equal(wrapped(y)[0], want) and torch.equal(ep.module()(y)[0], want)
