"""The torch op each drifting form of tests/causes names, for both exporters (issue 30 point 3).

    python scripts/torch_op_survey.py run OUT.jsonl [suite ...]     # explain each form (resumes OUT.jsonl)
    python scripts/torch_op_survey.py count OUT.jsonl               # the figures

The forms are the TorchScript ones the form suites (tests/causes/test_forms*.py) list outside their clean
controls, and forms30's; each is exported by both exporters and explained as ``drifttui diagnose`` does minus the six
steps.  ``count`` says how many TorchScript files with an error finding at the origin name a torch op, and, where
both exporters' files drift, how many name the same call.  SURVEY_SKIP_FROM=EARLIER.jsonl skips the dynamo files
that did not drift in an earlier run.  Slow (about 15 s a file): a development script, not a test.
"""
from __future__ import annotations

import glob
import importlib
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARGS = {"forms32": ("INPUTS", "OPSET"), "forms38": ("INPUTS", None), "forms40a": ("IMAGES", None),
        "forms40b": ("INPUTS", None), "forms40c": ("INPUTS", None), "forms30": ("INPUTS", None)}


def forms() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"forms30": {"shift", "logaddexp", "ce_smooth", "sdpa_masked"}}
    for f in sorted(glob.glob(str(ROOT / "tests/causes/test_forms*.py"))):
        name = os.path.basename(f)[:-3]
        module = importlib.import_module(f"tests.causes.{name}")
        for k, v in vars(module).items():
            if not k.isupper() or "CLEAN" in k or k == "FAST":
                continue
            for it in (v.keys() if isinstance(v, dict) else v if isinstance(v, (list, set, tuple)) else []):
                if isinstance(it, tuple) and len(it) == 2 and it[1] == "torchscript":
                    out.setdefault(name[len("test_"):], set()).add(it[0])
    return out


def run(out: str, only: set[str]) -> None:
    from tests.causes.form_suite import explained_forms

    class Tmp:
        def mktemp(self, n: str) -> pathlib.Path:
            return pathlib.Path(tempfile.mkdtemp(prefix=n))

    done: set[tuple] = set()
    for path, dynamo_only in ((os.environ.get("SURVEY_SKIP_FROM"), True), (out, False)):
        for line in (open(path) if path and os.path.exists(path) else []):
            r = json.loads(line)
            if not dynamo_only or (r["exporter"] == "dynamo" and r.get("verdict") != "drift"):
                done.add((r["suite"], r["model"], r["exporter"]))
    for suite, models in sorted(forms().items()):
        if only and suite not in only:
            continue
        tests = importlib.import_module("tests.causes." + ("test_generic_drifts" if suite == "forms30" else f"test_{suite}"))
        inputs, opset = ARGS.get(suite, (None, None))
        go = explained_forms(Tmp(), suite, inputs=getattr(tests, inputs) if inputs else None,
                             opset=getattr(tests, opset) if opset else None)
        for model in sorted(models):
            for exporter in ("torchscript", "dynamo"):
                if (suite, model, exporter) in done:
                    continue
                t, rec = time.time(), {"suite": suite, "model": model, "exporter": exporter}
                try:
                    result, ex = go(model, exporter)[3:5]
                    head = next((f for f in ex.findings if f.severity == "error"), None)
                    rec.update(verdict=result.verdict, origin=result.drift_origin.module if result.drift_origin else None,
                               module=head.module if head else None, check=head.check if head else None,
                               torch_op=head.torch_op if head else None, aten_op=head.aten_op if head else None,
                               msg=head.message[:300] if head else None)
                except Exception as e:  # noqa: BLE001 - an exporter that cannot export the form
                    rec["error"] = f"{type(e).__name__}: {e}"[:200]
                rec["s"] = round(time.time() - t, 1)
                with open(out, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")


def count(path: str) -> None:
    by: dict[tuple, dict[str, dict]] = {}
    for line in open(path):
        r = json.loads(line)
        by.setdefault((r["suite"], r["model"]), {})[r["exporter"]] = r
    ts = {k: v["torchscript"] for k, v in by.items() if v.get("torchscript", {}).get("module") is not None}
    pairs = {k: (v, by[k].get("dynamo", {})) for k, v in ts.items() if by[k].get("dynamo", {}).get("module") is not None}
    same = [k for k, (t, d) in pairs.items() if t["torch_op"] and t["torch_op"] == d["torch_op"]]
    print(f"TorchScript files with an error at the origin: {len(ts)}, torch op named: "
          f"{sum(1 for t in ts.values() if t['torch_op'])}")
    print(f"forms whose both files drift: {len(pairs)}, the same call named: {len(same)}")
    for k, t in sorted(ts.items()):
        if not t["torch_op"]:
            print("  unnamed:", "/".join(k), t["check"], (t["msg"] or "")[:100])
    for k, (t, d) in sorted(pairs.items()):
        if k not in same:
            print("  differ:", "/".join(k), t["torch_op"], "|", d["torch_op"])


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    if sys.argv[1] == "run":
        run(sys.argv[2], set(sys.argv[3:]))
    else:
        count(sys.argv[2])
