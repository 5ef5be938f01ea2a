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
