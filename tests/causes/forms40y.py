"""Held-out batch Y for issue 30 point 8 (session 37): a blind first-run measurement in the families **attention
masking, selection and cumulative functions** (heldX screened the others at the same time), screened with torch 2.13
/ ONNX Runtime 1.32, both exporters at their default opset, on (6, 32) rows, after grepping every earlier suite
(forms*.py and their screened lists, fx_forms, drifted, real, upstream, benchmarks/causes_forms.py) and upstream
threads (pytorch/pytorch, microsoft/onnxscript).  Written before the engine ran on any of them (/tmp/heldY/judge.md
of session 37): the first run's table is in test_forms40y.py.  Screening took about 30 minutes (eight rounds, some
90 exports).

Screened and matching (exact, or within 3e-7 relative), so not kept:
* selection: ``argmax`` / ``argmin`` of rounded rows (ties: the first index on both sides), ``tril`` / ``triu`` of a
  rectangular batch with offsets -2 and 3, ``repeat_interleave`` by a tensor, ``take`` with negative indices,
  ``index_put`` of a column set given by negative indices, ``index_put`` without ``accumulate`` (repeated and
  negative indices), ``scatter_reduce`` sum / prod / amax / amin with and without ``include_self`` (dynamo;
  TorchScript refuses ``include_self=False``), ``index_add(alpha=3)`` (dynamo; TorchScript refuses ``alpha``),
  columns picked by ``nonzero``, ``x[mask].mean()``, ``einsum("bii->bi")`` of a masked matrix (ONNX ``Einsum``
  extracts the diagonal), ``diag_embed`` of an inf vector and CCNet's criss-cross ``-diag(inf)`` (speedinghzl/
  CCNet#115: a constant both exporters fold in torch);
* attention masking: ``amax`` / ``logsumexp`` over a row masked whole with ``-inf``, an int64 position compared with a
  float fraction of a length (``pos < len * 0.75``), ``where(mask, int, 0.5)``, a masked mean by ``masked_select``
  of an empty selection (TorchScript; dynamo cannot export it);
* export refused by both (so no drift to measure): ``median`` / ``nanmedian``, ``sort(stable=True)``, ``cummax``,
  ``index_reduce``, ``fill_diagonal_``, ``scatter(reduce="add" / "multiply")``; ``trace``, ``diag`` and
  ``diag_embed`` by TorchScript, ``logcumsumexp`` by TorchScript; a ``torch.eye(n, dtype=torch.bool)`` mask exports with
  TorchScript as a bool ``EyeLike``, which ONNX Runtime has no kernel for (the forms write ``torch.eye(n) > 0``);
* drifting, but a mechanism the suites hold (not kept): an int32 ``cumsum`` past 2**31 (TorchScript; forms40d),
  ``logcumsumexp`` of a ramp (dynamo: torchlib shifts by the row's global max, -inf for the early prefixes;
  forms32), ``index_put(accumulate=True)`` with repeated indices (TorchScript; real.py, forms35),
  ``scatter_reduce("mean")`` (dynamo; forms33, forms_special), ``clamp`` of an integer by float bounds
  (TorchScript; forms40d), ``baddbmm(-inf bias, beta=0)`` (forms34).

What drifts, and is kept (no earlier suite holds it: grep of ``diagonal``, ``EyeLike``, ``diag(`` finds only
forms40c's einsum diagonal and finite diagonals, which matched): **both exporters lower ``torch.diagonal`` as a
product with an identity mask summed over a row**.  TorchScript's ``symbolic_opset13.diagonal`` (added in
pytorch/pytorch#64454 / #66144, its negative-dims fix #111130) and torchlib's ``aten_diagonal`` (written after it,
microsoft/onnxscript#679) compute ``ReduceSum(Transpose(x) * EyeLike(k=offset))`` and then slice out the diagonal's
length; torch's ``diagonal`` is a strided view that reads only the diagonal's elements.  Where an off-diagonal
element is ``-inf`` or NaN, ``-inf * 0`` is NaN and the row's sum is NaN: the file's diagonal is NaN where torch's is
finite.  A log-probability matrix masked with ``-inf`` (a causal attention, a similarity matrix whose self-pairs are
masked, a transition matrix with forbidden moves) is exactly where code reads a diagonal.  forms34's
``baddbmm_attention`` is the nearest held form (a lowering adds ``0 * bias`` for a ``beta=0`` term torch skips); here
the zeros are a selection mask, not a coefficient, and a ``Mul`` of two computed tensors, no constant zero.
The forms (each drifts with both exporters; three in deep models, 20 module calls):
* ``ntxent_positive`` (loss / attention masking, deep): SimCLR's NT-Xent over two views, the self-similarity masked
  with ``-inf`` before the log-softmax, the positive pairs read as ``logp.diagonal(n)`` and ``logp.diagonal(-n)``
  (Spijkervet/SimCLR's ``torch.diag(sim, batch_size)``, written with ``diagonal`` that TorchScript can export).
  Control: ``ntxent_positive_min`` (the self-pairs masked with ``torch.finfo(float32).min``, transformers' habit:
  ``min * 0`` is ``-0``, the file exact).
* ``self_attention`` (attention masking, deep): causal attention log-weights over 4 tokens, each token's weight on
  itself, ``logp.diagonal(dim1=-2, dim2=-1)``, gating the features.  Control: ``self_attention_open`` (no causal
  mask, the same code).
* ``previous_token`` (attention masking, shallow): a previous-token-head score, the log-weight each query puts on the
  token before it, ``diagonal(offset=-1, dim1=-2, dim2=-1)`` of (batch, heads, T, T) causal log-weights.
* ``hmm_stay`` (cumulative, deep): a left-to-right HMM's log transition matrix (stay or advance one state; the rest
  ``-inf``), the stay log-probabilities ``logA.diagonal(dim1=1, dim2=2)`` and their running sum over the states
  (``cumsum``: the log-probability of a path that stays once in each), added to the features.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
VIEWS = 6           # rows: one pair of views per row
TOKENS = 4


class NTXentPositive(nn.Module):
    """SimCLR's NT-Xent: each row's two halves are two views; the (12, 12) cosine similarity at temperature 0.1, the
    self-pairs masked with ``fill``, log-softmax over each row, the positives ``diagonal(+-6)``; the pair's loss
    added to the row's features."""

    def __init__(self, fill: float = float("-inf")) -> None:
        super().__init__()
        self.fill = fill

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = F.normalize(torch.cat([x[:, :16], x[:, 16:]]), dim=-1)
        sim = z @ z.t() / 0.1
        n = z.shape[0]
        logp = sim.masked_fill(torch.eye(n) > 0, self.fill).log_softmax(-1)
        pos = torch.cat([logp.diagonal(n // 2), logp.diagonal(-(n // 2))])
        loss = -(pos[: n // 2] + pos[n // 2:]) * 0.5
        return x + loss.unsqueeze(-1) * 0.1


class SelfAttention(nn.Module):
    """each row as 4 tokens of 8: the (causal) attention log-weights, each token's log-weight on itself gating its
    own features."""

    def __init__(self, causal: bool = True) -> None:
        super().__init__()
        self.causal = causal
        self.q = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.view(x.shape[0], TOKENS, 8)
        scores = self.q(t) @ t.transpose(1, 2) / 8 ** 0.5
        if self.causal:
            scores = scores.masked_fill(torch.ones(TOKENS, TOKENS, dtype=torch.bool).triu(1), float("-inf"))
        self_lp = scores.log_softmax(-1).diagonal(dim1=-2, dim2=-1)
        return (t * torch.sigmoid(self_lp + 1.0).unsqueeze(-1)).reshape(x.shape)


class PreviousToken(nn.Module):
    """each row as 2 heads of 4 tokens of 4: causal attention log-weights (batch, heads, T, T), the log-weight each
    query puts on the token before it (``diagonal(-1)``), added to the features."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.view(x.shape[0], 2, TOKENS, 4)
        scores = t @ t.transpose(-1, -2) * 0.5
        causal = torch.ones(TOKENS, TOKENS, dtype=torch.bool).triu(1)
        logp = scores.masked_fill(causal, float("-inf")).log_softmax(-1)
        prev = logp.diagonal(offset=-1, dim1=-2, dim2=-1).flatten(1)       # (batch, heads * (T - 1))
        return x + F.pad(prev, (0, WIDTH - prev.shape[1])) * 0.5


class HMMStay(nn.Module):
    """a left-to-right HMM over 8 states: transition scores from the features, every move but stay / advance one
    masked with ``-inf``, log-softmax over the next state; the stay log-probabilities (the diagonal) and their running
    sum over the states."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.arange(8)
        allowed = (s[None, :] >= s[:, None]) & (s[None, :] <= s[:, None] + 1)
        scores = x[:, :8, None] + x[:, None, 8:16]
        log_a = scores.masked_fill(~allowed, float("-inf")).log_softmax(-1)
        stay = log_a.diagonal(dim1=1, dim2=2)
        return x + torch.cat([stay, stay.cumsum(-1), stay, stay.cumsum(-1)], -1) * 0.2


def ntxent_positive() -> nn.Module: return _deep(NTXentPositive)                                             # noqa: E704
def ntxent_positive_min() -> nn.Module: return _deep(lambda: NTXentPositive(torch.finfo(torch.float32).min))  # noqa: E704
def self_attention() -> nn.Module: return _deep(SelfAttention)                                              # noqa: E704
def self_attention_open() -> nn.Module: return _deep(lambda: SelfAttention(causal=False))                   # noqa: E704
def previous_token() -> nn.Module: return _shallow(PreviousToken)                                           # noqa: E704
def hmm_stay() -> nn.Module: return _deep(HMMStay)                                                          # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(VIEWS, WIDTH)
