"""The tolerance a clean model passes with a stated margin, and what the current tolerance hides.

The engine's rule is |d| <= atol + rtol * scale (core/tolerance.py), per layer at its own scale.
A clean model passes it exactly when rtol * scale_i + atol >= floor_i for every layer and output,
so the advice is rtol = MARGIN * the largest relative floor (max |d| / scale) and atol = MARGIN *
the largest absolute floor among values whose scale is ~0 (there a relative tolerance misleads:
such a value is judged by atol, and by 1 - cosine, which does not depend on its scale).  MARGIN = 4:
the floor is measured on the check's own samples at every setting a deployment varies, and a drift
of 10x the floor is over the advised tolerance by 2.5x.  The advice is applied by running the
check with it: pass/fail stays ``core.decide``'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drifttui.core.compose.noise_floor import Floor, NoiseFloor
from drifttui.core.result import display_name

MARGIN = 4.0
TINY_SCALE = 1e-6     # a value this close to 0 everywhere is judged by atol


@dataclass
class Advice:
    atol: float
    rtol: float
    cos_floor: float                       # the largest 1 - cosine of the clean model
    margin: float
    tightest: str                          # the layer / output that sets rtol
    current: dict[str, Any] = field(default_factory=dict)   # the given tolerance against the floor
    lines: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"atol": self.atol, "rtol": self.rtol, "one_minus_cos": self.cos_floor, "margin": self.margin,
                "tightest": self.tightest, "current": self.current, "lines": self.lines}


def report(nf: NoiseFloor, adv: Advice) -> dict[str, Any]:
    """The floor and the advice as one plain dict: `drifttui tolerance --json` writes it, the TUI's
    tolerance screen renders it."""
    import dataclasses

    return {"advice": adv.to_dict(), "floors": [dataclasses.asdict(f) for f in nf.layers + nf.outputs],
            "repeat_max_abs": nf.repeat_max_abs, "variants": nf.variants}


def advise(nf: NoiseFloor, margin: float = MARGIN) -> Advice:
    items: list[Floor] = nf.layers + nf.outputs
    rel = [f for f in items if f.scale > TINY_SCALE]
    tight = max(rel, key=lambda f: f.max_rel, default=None)
    rtol_floor = tight.max_rel if tight is not None else 0.0
    abs_floor = max([f.max_abs for f in items if f.scale <= TINY_SCALE] + [nf.repeat_max_abs], default=0.0)
    tiny = 1e-12                              # a floor of exactly 0 (bit-exact) still gets a positive tolerance
    adv = Advice(atol=_round(margin * max(abs_floor, tiny)), rtol=_round(margin * max(rtol_floor, tiny)),
                 cos_floor=max((f.one_minus_cos for f in items), default=0.0), margin=margin,
                 tightest=f"{tight.kind} {tight.name}" if tight is not None else "")
    if not items:          # every value compared is a drift or downstream of one: nothing to measure
        adv.atol, adv.rtol = nf.config.atol, nf.config.rtol
    adv.current = _current(nf, rtol_floor, abs_floor)
    adv.lines = _lines(nf, adv, rtol_floor) + _left_out(nf, bool(items))
    return adv


def _left_out(nf: NoiseFloor, measured: bool) -> list[str]:
    """What the floor leaves out as drift, not noise, and what to do about it."""
    if not nf.drifts:
        return []
    first, rel = next(iter(nf.drifts.items()))
    more = f" and {len(nf.drifts) - 1} more" if len(nf.drifts) > 1 else ""
    down = f", the {len(nf.inherited)} layer(s) downstream" if nf.inherited else ""
    outs = " and the outputs" if nf.outputs_left_out else ""
    cfg = nf.config
    line = (f"left out as drift, not noise: {display_name(first)} (relative error {rel:.3g}){more}, whose own error "
            f"fails atol {cfg.atol:g} / rtol {cfg.rtol:g}{down}{outs}; the advice does not hide it: "
            "`drifttui diagnose` names its cause")
    if not measured:
        line += "; every value compared is a drift or downstream of one: the tolerance stays as given"
    return [line]


def _round(x: float) -> float:
    return float(f"{x:.2g}")


def _current(nf: NoiseFloor, rtol_floor: float, abs_floor: float) -> dict[str, Any]:
    cfg = nf.config
    out_scale = max((f.scale for f in nf.outputs), default=0.0)
    hides = cfg.atol + cfg.rtol * out_scale    # the largest output error the current tolerance passes
    worst_out = max((f.max_abs for f in nf.outputs), default=0.0)
    return {"atol": cfg.atol, "rtol": cfg.rtol,
            "rtol_over_floor": cfg.rtol / rtol_floor if rtol_floor > 0 else None,
            "output_scale": out_scale, "hides_up_to": hides,
            "hides_over_floor": hides / worst_out if worst_out > 0 else None}


def _lines(nf: NoiseFloor, adv: Advice, rtol_floor: float) -> list[str]:
    cur = adv.current
    lines = [f"noise floor over {len(nf.variants)} settings ({'; '.join(nf.variants)}), ORT run twice: "
             f"largest relative error {rtol_floor:.3g} ({adv.tightest or 'no layer'}), "
             f"repeat-run difference {nf.repeat_max_abs:.3g}"]
    lines.append(f"advised: --atol {adv.atol:g} --rtol {adv.rtol:g} ({adv.margin:g}x the floor); "
                 f"1 - cosine floor {adv.cos_floor:.3g}")
    ratio = cur["rtol_over_floor"]
    if ratio is not None:
        verdict = "tighter than the noise: a clean model may fail" if ratio < 1 else "above the noise floor"
        hides = (f"; an output drift of up to {cur['hides_up_to']:.3g} (scale {cur['output_scale']:.3g}) "
                 "would hide under it") if nf.outputs else ""
        lines.append(f"your rtol {cur['rtol']:g} is {ratio:.3g}x the noise floor here ({verdict}){hides}")
    return lines
