"""The torch calls ``fuzz_drifts.py`` draws from, in the six families issue 30's held-out set holds (attention
masking, arithmetic, distance, loss, cumulative functions, integer conversions).

Each entry makes, from a seeded ``random.Random``, one call with its arguments drawn (a rounding mode, an eps, a
``p``, a reduction, a mask's shape) and says it as source text.  The call takes a float (B, 32) tensor whose
values were already scaled (``Program`` draws the scale) and returns a tensor of any shape and dtype: ``Program``
brings it back to (B, 32).  Nothing here is a known drift: the draw is over the arguments users pass, and which
draws drift is what the fuzzer finds out.
"""
from __future__ import annotations

import random
from typing import Any, Callable

import torch
import torch.nn.functional as F

Call = tuple[str, Callable[[torch.Tensor], torch.Tensor]]      # (source text, the call)


def _other(x: torch.Tensor) -> torch.Tensor:
    """A second operand of the same shape, from the first (a model's two branches)."""
    return x.flip(-1) * 0.75 - 0.1


def _targets(x: torch.Tensor) -> torch.Tensor:
    return x.argmax(-1).flip(0)


def arithmetic(r: random.Random) -> Call:
    c = r.choice([0.7, -0.7, 3.0, -3.0, 0.3])
    mode = r.choice(["floor", "trunc"])
    beta, thr = r.choice([0.5, 1.0, 2.0, 4.0]), r.choice([1.0, 5.0, 20.0])
    dec = r.choice([0, 1, 2, -1])
    lo, hi = r.choice([(-1.0, 1.0), (0.5, -0.5), (None, 0.2), (-0.2, None)])
    p = r.choice([0.5, 1.5, 3.0, -1.0, -2.0])
    calls: list[Call] = [
        (f"torch.div(x, y, rounding_mode={mode!r})", lambda x: torch.div(x, _other(x), rounding_mode=mode)),
        (f"torch.remainder(x, {c})", lambda x: torch.remainder(x, c)),
        (f"torch.fmod(x, {c})", lambda x: torch.fmod(x, c)),
        (f"torch.round(x, decimals={dec})", lambda x: torch.round(x, decimals=dec)),
        ("torch.logaddexp(x, y)", lambda x: torch.logaddexp(x, _other(x))),
        ("torch.logaddexp2(x, y)", lambda x: torch.logaddexp2(x, _other(x))),
        ("torch.hypot(x, y)", lambda x: torch.hypot(x, _other(x))),
        ("torch.atan2(x, y)", lambda x: torch.atan2(x, _other(x))),
        ("torch.special.xlogy(x, y)", lambda x: torch.special.xlogy(x, _other(x).abs())),
        ("torch.special.xlog1py(x, y)", lambda x: torch.special.xlog1py(x, _other(x).abs())),
        ("torch.special.entr(x)", lambda x: torch.special.entr(x)),
        ("torch.sinc(x)", lambda x: torch.sinc(x)),
        ("torch.expm1(x)", lambda x: torch.expm1(x)),
        ("torch.log1p(x.abs())", lambda x: torch.log1p(x.abs())),
        (f"F.softplus(x, beta={beta}, threshold={thr})", lambda x: F.softplus(x, beta=beta, threshold=thr)),
        ("F.logsigmoid(x)", lambda x: F.logsigmoid(x)),
        ("F.mish(x)", lambda x: F.mish(x)),
        ("F.selu(x)", lambda x: F.selu(x)),
        (f"F.celu(x, alpha={beta})", lambda x: F.celu(x, alpha=beta)),
        ("F.gelu(x, approximate='tanh')", lambda x: F.gelu(x, approximate="tanh")),
        ("F.hardswish(x)", lambda x: F.hardswish(x)),
        (f"torch.clamp(x, {lo}, {hi})", lambda x: torch.clamp(x, lo, hi)),
        ("torch.sign(x) * torch.frac(x)", lambda x: torch.sign(x) * torch.frac(x)),
        (f"x.abs().pow({p})", lambda x: x.abs().pow(p)),
        ("torch.copysign(x, y)", lambda x: torch.copysign(x, _other(x))),
        ("torch.nan_to_num(x.log())", lambda x: torch.nan_to_num(x.log())),
        ("torch.special.logit(x.sigmoid(), eps=1e-6)", lambda x: torch.special.logit(x.sigmoid(), eps=1e-6)),
        ("torch.reciprocal(x).clamp(-1e3, 1e3)", lambda x: torch.reciprocal(x).clamp(-1e3, 1e3)),
    ]
    return r.choice(calls)


def integer(r: random.Random) -> Call:
    k = r.choice([1.0, 10.0, 100.0, 3.0e4])
    dt = r.choice([torch.int32, torch.int64, torch.int8, torch.uint8, torch.int16])
    n, d = r.choice([1, 2, 3]), r.choice([3, -3, 7])
    bounds = sorted(r.sample([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0], 4))
    right = r.choice([False, True])
    calls: list[Call] = [
        (f"(x * {k}).to({dt})", lambda x: (x * k).to(dt)),
        (f"(x * {k}).round().long()", lambda x: (x * k).round().long()),
        (f"(x * {k}).floor().int()", lambda x: (x * k).floor().int()),
        (f"(x * {k}).long() >> {n}", lambda x: (x * k).long() >> n),
        (f"(x * {k}).int() << {n}", lambda x: (x * k).int() << n),
        (f"(x * {k}).long() // {d}", lambda x: torch.div((x * k).long(), d, rounding_mode="floor")),
        (f"(x * {k}).long() % {d}", lambda x: (x * k).long() % d),
        (f"torch.bucketize(x, {bounds}, right={right})",
         lambda x: torch.bucketize(x, torch.tensor(bounds), right=right)),
        (f"(x * {k}).long().float() (past 2**24)", lambda x: (x * k * 1e3).long().float()),
        ("(x > 0).sum(-1, keepdim=True)", lambda x: (x > 0).sum(-1, keepdim=True)),
        ("x.argsort(-1)", lambda x: x.argsort(-1)),
        (f"(x * {k}).to(torch.int32).to(torch.float16)", lambda x: (x * k).to(torch.int32).to(torch.float16)),
        (f"torch.bitwise_and((x * {k}).long(), 0xF0)", lambda x: torch.bitwise_and((x * k).long(), 0xF0)),
    ]
    return r.choice(calls)


def cumulative(r: random.Random) -> Call:
    dim = r.choice([-1, 0])
    calls: list[Call] = [
        (f"torch.cumsum(x, {dim})", lambda x: torch.cumsum(x, dim)),
        (f"torch.cumprod(x, {dim})", lambda x: torch.cumprod(x, dim)),
        (f"torch.logcumsumexp(x, {dim})", lambda x: torch.logcumsumexp(x, dim)),
        (f"torch.cummax(x, {dim}).values", lambda x: torch.cummax(x, dim).values),
        (f"torch.cummin(x, {dim}).indices", lambda x: torch.cummin(x, dim).indices),
        (f"x.flip({dim}).cumsum({dim}).flip({dim})", lambda x: x.flip(dim).cumsum(dim).flip(dim)),
        (f"torch.diff(x, dim={dim})", lambda x: torch.diff(x, dim=dim)),
        ("torch.cumsum((x > 0).int(), -1)", lambda x: torch.cumsum((x > 0).int(), -1)),
        (f"torch.cumsum(x, {dim}, dtype=torch.float64)", lambda x: torch.cumsum(x, dim, dtype=torch.float64)),
        ("torch.trapezoid(x, dim=-1)", lambda x: torch.trapezoid(x, dim=-1)),
    ]
    return r.choice(calls)


def distance(r: random.Random) -> Call:
    p = r.choice([0.0, 1.0, 2.0, 3.0, float("inf")])
    eps = r.choice([1e-8, 1e-6, 1e-3, 0.5])
    keep = r.choice([False, True])
    calls: list[Call] = [
        (f"torch.cdist(x, y, p={p})", lambda x: torch.cdist(x, _other(x), p=p)),
        (f"F.pairwise_distance(x, y, p={p}, eps={eps}, keepdim={keep})",
         lambda x: F.pairwise_distance(x, _other(x), p=p, eps=eps, keepdim=keep)),
        (f"F.cosine_similarity(x, y, eps={eps})", lambda x: F.cosine_similarity(x, _other(x), eps=eps)),
        (f"F.normalize(x, p={p}, eps={eps})", lambda x: F.normalize(x, p=max(p, 1.0), eps=eps)),
        (f"torch.linalg.vector_norm(x, ord={p}, dim=-1)", lambda x: torch.linalg.vector_norm(x, ord=p, dim=-1)),
        (f"torch.dist(x, y, p={p})", lambda x: torch.dist(x, _other(x), p=p)),
        ("torch.pdist(x)", lambda x: torch.pdist(x)),
        (f"torch.cdist(x, x, p={p})", lambda x: torch.cdist(x, x, p=p)),
    ]
    return r.choice(calls)


def loss(r: random.Random) -> Call:
    red = r.choice(["none", "mean", "sum"])
    ls = r.choice([0.0, 0.1, 0.3])
    beta = r.choice([0.0, 0.5, 1.0, 2.0])
    ign = r.choice([0, 3, -100])
    calls: list[Call] = [
        (f"F.cross_entropy(x, t, label_smoothing={ls}, reduction={red!r}, ignore_index={ign})",
         lambda x: F.cross_entropy(x, _targets(x), label_smoothing=ls, reduction=red, ignore_index=ign)),
        (f"F.nll_loss(x.log_softmax(-1), t, reduction={red!r}, ignore_index={ign})",
         lambda x: F.nll_loss(x.log_softmax(-1), _targets(x), reduction=red, ignore_index=ign)),
        (f"F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction={red!r})",
         lambda x: F.binary_cross_entropy(x.sigmoid(), _other(x).sigmoid(), reduction=red)),
        (f"F.binary_cross_entropy_with_logits(x, y.sigmoid(), reduction={red!r})",
         lambda x: F.binary_cross_entropy_with_logits(x, _other(x).sigmoid(), reduction=red)),
        (f"F.kl_div(x.log_softmax(-1), y.log_softmax(-1), log_target=True, reduction={red!r})",
         lambda x: F.kl_div(x.log_softmax(-1), _other(x).log_softmax(-1), log_target=True, reduction=red)),
        (f"F.smooth_l1_loss(x, y, beta={beta}, reduction={red!r})",
         lambda x: F.smooth_l1_loss(x, _other(x), beta=beta, reduction=red)),
        (f"F.huber_loss(x, y, delta={max(beta, 0.1)}, reduction={red!r})",
         lambda x: F.huber_loss(x, _other(x), delta=max(beta, 0.1), reduction=red)),
        (f"F.soft_margin_loss(x, y.sign(), reduction={red!r})",
         lambda x: F.soft_margin_loss(x, _other(x).sign(), reduction=red)),
        (f"F.poisson_nll_loss(x, y.abs(), log_input=True, full=True, reduction={red!r})",
         lambda x: F.poisson_nll_loss(x, _other(x).abs(), log_input=True, full=True, reduction=red)),
        (f"F.hinge_embedding_loss(x, y.sign(), margin={beta}, reduction={red!r})",
         lambda x: F.hinge_embedding_loss(x, _other(x).sign(), margin=beta, reduction=red)),
        (f"F.margin_ranking_loss(x, y, y.sign(), margin={beta}, reduction={red!r})",
         lambda x: F.margin_ranking_loss(x, _other(x), _other(x).sign(), margin=beta, reduction=red)),
        (f"F.multilabel_soft_margin_loss(x, (y > 0).float(), reduction={red!r})",
         lambda x: F.multilabel_soft_margin_loss(x, (_other(x) > 0).float(), reduction=red)),
        (f"F.gaussian_nll_loss(x, y, y.abs() + 1e-3, full=True, reduction={red!r})",
         lambda x: F.gaussian_nll_loss(x, _other(x), _other(x).abs() + 1e-3, full=True, reduction=red)),
    ]
    return r.choice(calls)


def masking(r: random.Random) -> Call:
    fill = r.choice(["float('-inf')", "torch.finfo(x.dtype).min", "-1e9", "-1e4"])
    value = {"float('-inf')": float("-inf"), "-1e9": -1e9, "-1e4": -1e4}.get(fill)
    whole = r.choice([False, True])            # a whole row masked (a padded query)
    causal = r.choice([False, True])

    def mask(x: torch.Tensor) -> torch.Tensor:
        m = x > 0.3
        if whole:
            m = m.clone()
            m[0] = True
        return m

    def fill_value(x: torch.Tensor) -> float:
        return torch.finfo(x.dtype).min if value is None else value

    def sdpa(x: torch.Tensor) -> torch.Tensor:
        b, d = x.shape
        q = x.view(1, 1, b, d)
        keep = ~mask(x)[:, :b]
        return F.scaled_dot_product_attention(q, q, q, attn_mask=keep.view(1, 1, b, b), is_causal=False).view(b, d)

    calls: list[Call] = [
        (f"x.masked_fill(m, {fill}).softmax(-1)", lambda x: x.masked_fill(mask(x), fill_value(x)).softmax(-1)),
        (f"x.masked_fill(m, {fill}).log_softmax(-1)", lambda x: x.masked_fill(mask(x), fill_value(x)).log_softmax(-1)),
        (f"torch.where(m, {fill}, x).softmax(-1)",
         lambda x: torch.where(mask(x), torch.tensor(fill_value(x)), x).softmax(-1)),
        (f"(x + m * {fill}).softmax(-1)", lambda x: (x + mask(x).float() * fill_value(x)).softmax(-1)),
        ("F.scaled_dot_product_attention(q, q, q, attn_mask=~m)", sdpa),
        (f"x.masked_fill(m, {fill}).amax(-1)", lambda x: x.masked_fill(mask(x), fill_value(x)).amax(-1)),
        (f"torch.logsumexp(x.masked_fill(m, {fill}), -1)",
         lambda x: torch.logsumexp(x.masked_fill(mask(x), fill_value(x)), -1)),
        (f"x.tril({'0' if causal else '-1'}).masked_fill(x.tril() == 0, {fill}).softmax(-1)",
         lambda x: x.tril(0 if causal else -1).masked_fill(x.tril(0 if causal else -1) == 0,
                                                            fill_value(x)).softmax(-1)),
    ]
    return r.choice(calls)


FAMILIES: dict[str, Callable[[random.Random], Call]] = {
    "arithmetic": arithmetic, "integer": integer, "cumulative": cumulative,
    "distance": distance, "loss": loss, "masking": masking,
}


def back(y: torch.Tensor, x: torch.Tensor, width: int = 32) -> torch.Tensor:
    """A call's result brought back to ``x``'s (B, width) float32: rows kept, the columns it lacks taken from ``x``."""
    y = y.to(torch.float32)
    b = x.shape[0]
    if y.dim() == 0 or y.numel() % b:
        y = y.reshape(1, -1).expand(b, -1)
    y = y.reshape(b, -1)[:, :width]
    return y if y.shape[1] == width else torch.cat([y, x[:, y.shape[1]:]], 1)


def draw(r: random.Random) -> tuple[str, str, Callable[[Any], Any], float]:
    """(family, source text, call, input scale); one draw in three chains two calls, the second's family drawn too
    (a masked softmax then a loss; an integer bucket then a cumulative sum)."""
    family = r.choice(sorted(FAMILIES))
    text, call = FAMILIES[family](r)
    if r.random() < 1 / 3:
        then = r.choice(sorted(FAMILIES))
        text2, call2 = FAMILIES[then](r)
        first = call
        family, text = f"{family}+{then}", f"{text} |> {text2}"
        call = lambda x: call2(back(first(x), x))      # noqa: E731
    return family, text, call, r.choice([1.0, 1.0, 10.0, 100.0, 1e4])
