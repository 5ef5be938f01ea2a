"""causes/locate/dropped_args.py and its use in torch_align: a torch function whose ``__torch_function__`` dispatch
drops an argument (``F.l1_loss(..., weight=w)``, pytorch/pytorch#193003) computes otherwise under a torch-function
mode than run plainly; the value alignment records the call with the argument put back, as the plain forward makes
it, and names that call, with the argument it drops, as the torch op a file traced through such a mode gets wrong."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


class _Complete(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, list[str]]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        from drifttui.core.explain.causes.locate.dropped_args import completed

        args, kwargs, dropped = completed(func, args, kwargs or {})
        self.seen.append((getattr(func, "__name__", str(func)), dropped))
        return func(*args, **kwargs)


def _xw():
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 8, generator=g), torch.randn(4, 8, generator=g), torch.rand(4, 8, generator=g)


def test_a_dropped_weight_is_put_back_and_named():
    x, y, w = _xw()
    mode = _Complete()
    with mode:
        got = F.l1_loss(x, y, reduction="none", weight=w)
    assert torch.equal(got, (x - y).abs() * w)
    assert ("l1_loss", ["weight"]) in mode.seen


def test_calls_that_pass_everything_on_or_hold_defaults_are_left_alone():
    x, y, w = _xw()
    mode = _Complete()
    with mode:
        F.mse_loss(x, y, reduction="none", weight=w)
        F.l1_loss(x, y, reduction="sum")                    # weight at its default
        F.group_norm(x.view(4, 8, 1), 2, eps=1e-3)
        torch.sigmoid(x).sum(-1)
    assert all(d == [] for _, d in mode.seen), mode.seen


class _Weighted(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conf = torch.nn.Linear(8, 8)

    def forward(self, x):
        return 0.5 * F.l1_loss(x * 2, x, reduction="none", weight=torch.sigmoid(self.conf(x))) + x


def test_the_recorded_forward_computes_the_plain_forward_and_marks_the_call():
    from drifttui.core.explain.causes.locate.forward_record import record as _run

    torch.manual_seed(0)
    m, x = _Weighted().eval(), _xw()[0]
    with torch.no_grad():
        ops, _, dropped = _run(m, (x,))
        want = m(x)
    loss = next(k for k, o in enumerate(ops) if o[1] == "torch.nn.functional.l1_loss")
    assert list(dropped) == [loss] and dropped[loss][0] == ["weight"]
    sig = next(k for k, o in enumerate(ops) if o[1] == "torch.sigmoid")
    assert sig in ops[loss][3] and sig not in dropped[loss][1]      # the weight read, not dispatched
    assert torch.allclose(torch.from_numpy(ops[-2][2]), want)


def test_the_op_says_what_its_dispatch_drops():
    from drifttui.core.explain.causes.locate.torch_align import TorchOp

    op = TorchOp("torch.nn.functional.l1_loss", ["n"], ["Abs"], aten="aten.l1_loss.default", dropped=["weight"])
    assert "drops weight=" in op.words() and op.evidence()["torch_op_dropped"] == ["weight"]
    assert "drops" not in TorchOp("torch.abs", ["n"], ["Abs"]).words()
