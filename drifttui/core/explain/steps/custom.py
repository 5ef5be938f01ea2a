"""Step 6: custom-module causes (see drifttui/core/explain/checks/custom_module.py for the analysis)."""
from __future__ import annotations

from drifttui.core.explain.checks.custom_module import analyse
from drifttui.core.result import Step, display_name
from drifttui.core.explain.context import Context, clean

TITLE = "Custom-module causes"


def run(ctx: Context) -> Step:
    ctx.say("step 6: scanning modules for unregistered tensors, weight and source hazards")
    data = analyse(ctx)
    o = ctx.result.drift_origin
    index_of = {}
    for L in ctx.result.layers:
        index_of.setdefault(L.module, L.index)
    bad_attrs = [a for a in data["tensor_attributes"] if a.get("onnx_value") is not None and not a.get("equal", True)]
    bad_params = data["param_value_diffs"]
    evidence = clean({k: (v[:20] if isinstance(v, list) else v) for k, v in data.items()})
    layers = [index_of[x["module"]] for x in bad_attrs + bad_params if x["module"] in index_of]
    if o is not None and o.layer not in layers and any(x["module"] == o.module for x in bad_attrs + bad_params):
        layers.insert(0, o.layer)
    if bad_attrs:
        first = bad_attrs[0]
        at_origin = o is not None and any(a["module"] == o.module for a in bad_attrs)
        return Step(6, TITLE, "fail",
                    f"{len(bad_attrs)} plain tensor attribute(s) differ from the values in the ONNX file, first "
                    f"{first['module']}.{first['attr']} (max diff {first['max_abs_diff']:.3g})"
                    + (" - this is the drift origin" if at_origin else ""), evidence,
                    f"register {first['attr']} as a buffer (register_buffer) so state_dict carries it, then "
                    "reload the trained weights", layers)
    if bad_params:
        p = bad_params[0]
        return Step(6, TITLE, "fail",
                    f"{len(bad_params)} initializer(s) differ from the torch parameters, first {p['param']} "
                    f"(max diff {p['max_abs_diff']:.3g})", evidence,
                    "re-export from the weights you compare with; if the values look rounded, see the dtype finding",
                    layers)
    rounded = data.get("rounded_value_diffs", [])
    if rounded:
        r = rounded[0]
        at_origin = o is not None and any(x["module"] == o.module for x in rounded)
        return Step(6, TITLE, "fail",
                    f"{len(rounded)} initializer(s) hold the torch values rounded to {r['rounded_to']}, first "
                    f"{r['param']}{' (compared through the Conv+BatchNorm fold)' if r['folded'] else ''} "
                    f"(max diff {r['max_abs_diff']:.3g})" + (" - this is the drift origin" if at_origin else ""),
                    evidence, "see the dtype finding: keep the weights in float32 when exporting",
                    [index_of[x["module"]] for x in rounded if x["module"] in index_of])
    origin_hazards = [h for h in data["source_hazards"] if o is not None and h["module"] == o.module]
    plain = list(data["tensor_attributes"])
    if origin_hazards:
        return Step(6, TITLE, "inconclusive",
                    f"{display_name(o.module)}.forward has eager-versus-traced hazard(s): {origin_hazards[0]['why']}",
                    evidence, "replace Python-side values with tensor ops, then re-export", [o.layer])
    summary = "parameters, buffers and tensor attributes match the ONNX initializers"
    if plain:
        summary += (f"; {len(plain)} plain tensor attribute(s) (not in state_dict) agree for now: "
                    + ", ".join(f"{a['module']}.{a['attr']}" for a in plain[:3]))
    wide = data.get("float64_tensors", [])
    if wide:
        summary += (f"; {len(wide)} float64 tensor(s) compared at float32 precision, first {wide[0]} (an op reading "
                    "one computes in float64 in torch: see the dtype finding if the file holds it at float32)")
    if data["folded_weights_checked"]:
        summary += f"; {data['folded_weights_checked']} Conv+BatchNorm folded weight(s) verified"
    return Step(6, TITLE, "pass", summary, evidence,
                "register plain tensor attributes as buffers" if plain else "", layers)
