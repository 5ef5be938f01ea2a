"""The items of a multi-output op are torch values too (a dynamo file).

The dynamo exporter names the outputs of a multi-output op after the FX ``getitem`` nodes that read them
(``TopK -> getitem, getitem_1``); ``fx_localise._match`` keeps a torch value only for an FX node with ONNX nodes of
its own, and ``topk``'s value is a tuple, so neither item had a torch value.  When a child module of the origin reads
such an item (an ``Embedding`` of the top-k indices, beam search's candidates: forms42i's ``beam_masked``), the
origin's case feeds the child torch's output and its own outputs pass: the TopK's indices, tied ``-inf`` scores
ordered otherwise than torch orders them, were never compared, and no cause was named.  The items are matched by
name with their ``getitem`` nodes' torch values, so the case compares them (``first_failing_alone``) and the origin
says why no patch exists (``propose/nopatch.py``), as it does for the TorchScript file."""
from __future__ import annotations

import torch
from torch import nn

HERE = __file__


class _Candidates(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = x.log_softmax(-1).masked_fill(x < 1.0, -float("inf"))     # fewer finite scores than candidates
        top, tokens = torch.topk(scores, 8)
        return self.emb(tokens).mean(1) + top.clamp_min(-30.0).mean(-1, keepdim=True)


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _Candidates()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 16)


def test_a_child_reading_the_tied_indices_of_a_topk_names_the_ties(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, result, exp = explained_small(tmp_path, HERE, model, rows, dynamo=True)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.check == "op-compat" and head.verified is False, (head.check, head.message)
    assert "tied values" in head.message and "no patch exists" in head.message


class _Nucleus(nn.Module):
    """top-p filtering of quantised logits: the sort's tied logits reach the output through a cumsum and a scatter."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = torch.round(x * 4.0) / 4.0
        ordered, order = torch.sort(logits, descending=True)
        remove = ordered.softmax(-1).cumsum(-1) > 0.9
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = False
        return logits.masked_fill(remove.scatter(1, order, remove), -float("inf")).softmax(-1)


def nucleus() -> nn.Module:
    torch.manual_seed(0)
    tiny = _Tiny()
    tiny.body = _Nucleus()
    return tiny.eval()


def test_the_ties_story_opens_with_the_torch_op_whose_topk_ties(tmp_path):
    """The first value of the dynamo file wrong on its own is the scatter's (it reads the sort's tied indices); the
    story is the sort's TopK, so the message opens with torch's sort, the op that was called, not the scatter."""
    from tests.causes.conftest import explained_small

    _, _, _, result, exp = explained_small(tmp_path, HERE, nucleus, rows, dynamo=True)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = next(f for f in exp.findings if f.severity == "error")
    assert head.check == "op-compat" and "tied values" in head.message, (head.check, head.message)
    assert head.message.startswith("in torch's sort") and "sort" in head.torch_op, head.message
