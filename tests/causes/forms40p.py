"""Held-out batch P for issue 30 point 8 (session 34): a blind first-run measurement in three of the families the
private set is said to hold, **attention masking, integer conversions, cumulative functions** (heldQ screened
distance, loss and arithmetic at the same time), screened with torch 2.13 / ONNX Runtime 1.32, both exporters at
their default opset, on (6, 32) rows, after grepping every earlier suite (forms*.py and their screened lists,
fx_forms, drifted, real, upstream, test_upstream_drifts, benchmarks/causes_forms.py).  Written before the engine ran
on any of them (/tmp/heldP/judge.md of session 34): the first run's table is in test_forms40p.py.  Screening was
time-boxed (about 20 minutes, eighteen rounds, some 170 calls); in these three families almost everything matches,
refuses to export, or is a form the suites hold.

Screened and matching (exact, or within 2e-7 relative), so not kept:
* attention masking: a sliding-window mask by ``masked_fill(|i - j| > w, -inf)`` and as an SDPA boolean mask,
  ``where(mask, x, -inf).softmax().nan_to_num()``, ``finfo.min`` fills, ``-1e9`` fills over a row masked whole,
  ``log_softmax`` / ``logsumexp`` of ``-inf``-masked rows; every ``torch.masked`` reduction with a row masked whole
  (``mean``, ``sum``, ``amax``, ``amin``, ``logsumexp``, ``norm``, ``cumsum``, ``log_softmax``, ``softmin``,
  ``normalize``, ``prod``, ``argmax``; ``var`` / ``std`` with TorchScript, dynamo's file is refused by ONNX Runtime);
  ``masked_scatter`` of rows and by a data mask (pytorch/pytorch#186146's form, fixed), ``x[mask] = v``,
  ``index_put`` / ``index_copy`` / ``scatter`` with duplicate indices, ``scatter_add``; an SDPA boolean mask whose
  queries overflow float32 to 1e30 (the scores stay finite);
* integer conversions and index arithmetic: ``F.interpolate(mode="nearest")`` at 1/3, 2/3, 0.7, 0.9, 1.1, 1.3, 0.45
  and at 10 output sizes, ``grid_sample(mode="nearest")`` on a 0.1 grid (both ``align_corners``), ``max_pool1d``
  indices, ``(x * 31.999).long()`` buckets, ``torch.arange`` with a float step, ``linspace(..., dtype=long)``,
  ``linspace().long()`` / ``.round().long()`` (microsoft/onnxscript#854's op: folded to constants here), int64
  ``** 2`` / ``** 3`` / ``square`` / ``x * x`` then ``%`` past 2**53 (wrapping on both sides), a multiplicative hash
  ``(a * 2654435761) % 2**32``, ``sqrt`` of int64 squares, int64 ``/ 1000`` then ``.long()``; float -> uint16 /
  uint32 / uint64 (dynamo; TorchScript: "not a valid JitScalarType"), int64 -> int32 -> int64, int64 -> int16 /
  uint8 / int8, int64 -> float -> int64 past 2**24, int64 -> float16 -> int64, int32 -> float -> int32, float ->
  int32 -> int8, float -> int64 -> uint8 / bool / float / float16 / float64, float -> int32 -> int64 / float16 /
  bool, float64 -> float32 -> int64, int16 -> float16 -> int32, clamp to int8 then cast; ``x.view(torch.int32)``
  (bit casts) export with neither exporter;
* cumulative: ``flip().cumsum().flip()``, ``cumsum`` over dim 0, the exclusive ``cumsum(x) - x``, a running max by
  ``amax`` of prefixes, ``exp(x).cumsum() / sum``, a sparsemax (sort, ``cumsum``, support by ``1 + k z > cumsum``)
  on and off a quarter grid, ``diff(n=3)`` and ``diff`` of bool (dynamo; TorchScript refuses ``diff``);
  ``cummax`` / ``cumprod`` still export with neither exporter (pytorch/pytorch#102948);
* drifting, but a form the suites hold (not kept): nearest ``interpolate`` at ``scale_factor`` 0.3 / 0.15
  (microsoft/onnxruntime#12098, upstream.py's ``nearest_scale``), ``scatter_reduce("mean", include_self=False)``
  (dynamo: forms_special's ``gnn_mean``), ``index_put(accumulate=True)`` with duplicates (TorchScript: real.py's
  ``indexput``), ``EmbeddingBag(mode="max")`` with an empty bag (TorchScript: forms33's ``empty_bag_max``),
  ``quantize_per_tensor`` on a tie grid (TorchScript; dynamo fails: the reciprocal-scale rounding of forms40h's
  ``channel_quant``), ``int64.float() % 7`` of 3e9 (forms40h's ``phase_wrap``), ``cumsum`` of int32 past 2**31
  (TorchScript, forms35), ``cumsum`` of 1/40 s steps (torch's double accumulation, forms39/forms40i);
* drifting, not kept: an SDPA boolean mask over queries holding ``inf`` (both guards, ``Where(IsNaN(w), 0, w)``,
  zero the NaN row torch keeps: an input no model makes), float16 SDPA with a causal boolean mask over 300x
  queries (dynamo: float16 scores overflow, a made-up scale).

Kept (each drifts over drifttui's default tolerance with both exporters; three of the four in deep models, 20
module calls), one new mechanism, an integer conversion: ONNX Runtime's RemoveDuplicateCastTransformer (run by its
InsertCastTransformer at every optimisation level, ``disable`` included) merges ``Cast(float -> int64) ->
Cast(int64 -> int32)`` into one ``Cast(float -> int32)`` (it judges the second Cast's reverse, int32 -> int64,
safe; microsoft/onnxruntime#17953 rewrote that rule, #13418 / #11994 are pairs it merged into bool), unless the
int64 value is a graph output.  torch's ``.long().int()`` truncates to int64 and keeps the low 32 bits (a wrap
modulo 2**32); the merged conversion sends a float past 2**31 to INT_MIN (x86's integer indefinite), and a float ->
int16 one to 0.  The exporters are right (both write the two Casts) and so is the ONNX reference implementation:
only the deployed session drifts.  forms40f's ``half_codes`` is the same transformer on a float16 rounding; here it
is an integer wrap, and nothing in the catalogue wrote it.
* ``tick_hash`` (deep) / ``tick_hash_shallow``: event times on a millisecond grid, their nanosecond ticks ``(t *
  1e9).long()``, the low 32 bits ``.int()`` as a hash seed, ``seed % 61`` into an embedding (a 32-bit timestamp
  hash).  Control: ``tick_hash_short`` (every time under 2.147 s: no value past 2**31).
* ``tile_id`` (deep): UTM eastings around 500 km in fixed point at 0.1 mm, ``(e * 1e4).long().to(torch.int16)`` (the
  low 16 bits as a tile id) into an embedding.  Control: ``tile_id_near`` (eastings around 1 km: under 2**31 the
  merged float -> int16 conversion goes through int32 and wraps as torch does).
* ``segment_seeds`` (deep, cumulative): 8 segment durations in quarter seconds (exact), their starts ``cumsum(d) -
  d``, each start in nanoseconds ``.long().int()`` as the segment's seed, ``seed % 61`` into an embedding.  Control:
  ``segment_seeds_short`` (1/32 s steps: the cumsum exact, every start under 2**31 ns).

Held out, written after the fix (not counted in the first run): ``held_double_ticks`` (deep: the ticks computed in
float64, a double -> int64 -> int32 pair).

The deep forms sit after forms30's 16-call stem and before a head (20 module calls), the shallow one after one
Linear; the form is always the child ``body``.
"""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep, seeded_shallow as _shallow

WIDTH = 32
BUCKETS = 64
PRIME = 61        # the buckets a seed hashes to: a prime, so the low bits of a multiple of 2**6 still spread


class TickHash(nn.Module):
    """event times in seconds from the features (a millisecond grid, ``span`` seconds wide), their nanosecond ticks
    ``(t * 1e9).long()``, the low 32 bits ``.int()`` as a hash seed, the seed's bucket ``seed % 61`` and its
    embedding added (a 32-bit timestamp hash)."""

    def __init__(self, span: float = 9.5) -> None:
        super().__init__()
        self.span = span
        self.table = nn.Embedding(BUCKETS, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ms = torch.round(torch.clamp(x.abs(), max=1.0) * self.span * 1000)
        seed = (ms * 1e6 + 5e8).long().int()
        bucket = (seed % PRIME).long()
        return self.table(bucket[:, :4]).sum(1) * 0.5 + x


class TileId(nn.Module):
    """UTM eastings in metres from the features (a 0.5 m grid around 500 km), in fixed point at 0.1 mm
    ``(e * 1e4).long()``, the low 16 bits ``.to(torch.int16)`` as a tile id, whose bucket's embedding is added."""

    def __init__(self, level: float = 5e5) -> None:
        super().__init__()
        self.level = level
        self.table = nn.Embedding(BUCKETS, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.round(x * 200) * 0.5 + self.level
        tile = (e * 1e4).long().to(torch.int16)
        return self.table((tile % PRIME).long()[:, :4]).sum(1) * 0.5 + x


class SegmentSeeds(nn.Module):
    """8 segment durations of 0 .. 8 quarter seconds from the features (exact in float32), their start times
    ``cumsum(d) - d``, each start in nanoseconds ``(start * 1e9).long().int()`` (the low 32 bits as the segment's
    seed, as a timeline's per-segment noise seeds), the seed's bucket ``seed % 61`` and its embedding added."""

    def __init__(self, quarter: float = 0.25) -> None:
        super().__init__()
        self.quarter = quarter
        self.table = nn.Embedding(BUCKETS, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = (torch.round(x[:, :8].abs() * 40) % 9) * self.quarter
        start = torch.cumsum(d, -1) - d
        seed = (start * 1e9).long().int()
        return self.table((seed % PRIME).long()[:, 4:]).sum(1) * 0.5 + x


class DoubleTicks(nn.Module):
    """held out (written after the fix): ``TickHash`` with the ticks computed in float64, ``(t.double() *
    1e9).long().int()``: the Cast pair read is double -> int64 -> int32."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(BUCKETS, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.round(x.abs() * 20000) / 1000 + 0.5
        seed = (t.double() * 1e9).long().int()
        return self.table((seed % PRIME).long()[:, :4]).sum(1) * 0.5 + x


def tick_hash() -> nn.Module: return _deep(TickHash)                                          # noqa: E704
def tick_hash_shallow() -> nn.Module: return _shallow(TickHash)                               # noqa: E704
def tick_hash_short() -> nn.Module: return _deep(lambda: TickHash(span=1.5))                  # noqa: E704
def segment_seeds() -> nn.Module: return _deep(SegmentSeeds)                                  # noqa: E704
def segment_seeds_short() -> nn.Module: return _deep(lambda: SegmentSeeds(quarter=0.03125))      # noqa: E704
def held_double_ticks() -> nn.Module: return _deep(DoubleTicks)                              # noqa: E704
def tile_id() -> nn.Module: return _deep(TileId)                                              # noqa: E704
def tile_id_near() -> nn.Module: return _deep(lambda: TileId(level=1e3))                      # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)
