"""``drifttui repro``: the origin's own nodes as a self-contained ONNX test case.

Layout (the ONNX backend-test layout that onnxruntime's ``onnx_test_runner`` and upstream bug
trackers read)::

    DIR/model.onnx                      the origin's nodes, inputs cut at the module boundary
    DIR/test_data_set_0/input_K.pb      the PyTorch-side inputs (TensorProto, named as the graph inputs)
    DIR/test_data_set_0/output_K.pb     the PyTorch-side expected outputs
    DIR/README.md                       what it is, and how to run it with onnxruntime alone

The folder is built next to DIR under a temporary name and renamed into place: a failed run
leaves nothing half-written.  DIR must not exist yet (or be an empty folder).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import Eval, ort_error
from drifttui.errors import InputError

RUN_SNIPPET = """python - <<'PY'
import glob, numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
load = lambda f: numpy_helper.to_array(onnx.load_tensor(f))
names = lambda f: onnx.load_tensor(f).name
s = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
ins = sorted(glob.glob("test_data_set_0/input_*.pb")); outs = sorted(glob.glob("test_data_set_0/output_*.pb"))
got = s.run([names(f) for f in outs], {names(f): load(f) for f in ins})
for f, g in zip(outs, got):
    print(names(f), "max |onnxruntime - torch| =", float(np.abs(g.astype(np.float64) - load(f)).max()))
PY"""


def write_case(case: Case, path: str, loc_note: str = "") -> Eval:
    """Write the test case to ``path``; the ORT error it reproduces (checked on the written files)."""
    import onnx
    from onnx import numpy_helper

    p = Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)   # a link: its target
    parent = p.parent if str(p.parent) else Path(".")
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".drifttui-repro-", dir=str(parent)))
    except OSError as exc:
        raise _write_error(path, exc) from exc
    try:
        onnx.save(case.model, str(tmp / "model.onnx"))
        data = tmp / "test_data_set_0"
        data.mkdir()
        for k, (name, arr) in enumerate(case.feeds.items()):
            (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(arr, name).SerializeToString())
        for k, (name, arr) in enumerate(case.expected.items()):
            (data / f"output_{k}.pb").write_bytes(numpy_helper.from_array(arr, name).SerializeToString())
        reloaded = onnx.load(str(tmp / "model.onnx"))
        ev = ort_error(case, reloaded)
        (tmp / "README.md").write_text(_readme(case, ev, loc_note))
        os.chmod(tmp, 0o777 & ~_umask())
        os.replace(tmp, p)      # over an empty folder only: one another run filled meanwhile is kept
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _write_error(path, exc) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ev


def _write_error(path: str, exc: OSError) -> InputError:
    """The one line for a test case that could not be written: the cause and the folder."""
    import errno

    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
        return InputError(f"--out {path!r} was filled by something else while this run worked (another "
                          "repro on the same folder?); it is left as it is, no test case written",
                          "give each run a new folder")
    from drifttui.errors import environment_failure   # lazy: only on a failed write

    refused = environment_failure(exc)
    cause = refused.problem if refused is not None else f"{exc.strerror or exc}"
    return InputError(f"cannot write the test case to --out {path!r}: {cause}; nothing written there",
                      refused.fix if refused is not None else "pick a folder you can write to")


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def _readme(case: Case, ev: Eval, note: str) -> str:
    onnx_fed = (f"\nInputs computed by ONNX Runtime (no PyTorch counterpart): {', '.join(case.onnx_fed)}.\n"
                if case.onnx_fed else "")
    return (f"# drifttui repro: {case.module or '(root)'}\n\n"
            f"The drift origin's own ONNX nodes ({len(case.nodes)}: {', '.join(case.nodes[:8])}"
            f"{'...' if len(case.nodes) > 8 else ''}), fed with the PyTorch-side inputs of sample {case.sample}.\n"
            f"`test_data_set_0/output_*.pb` hold the **PyTorch** outputs; ONNX Runtime differs from them by "
            f"max |d| = {ev.max_abs:.4g} (tolerance atol={case.atol:g} + rtol={case.rtol:g} x scale).\n"
            f"{onnx_fed}{note and chr(10) + note + chr(10)}\n"
            "Run it with onnxruntime alone (`onnx_test_runner .` from an onnxruntime build works too):\n\n"
            f"```sh\n{RUN_SNIPPET}\n```\n")


def summary(case: Case, ev: Eval, path: str) -> dict[str, Any]:
    return {"dir": path, "module": case.module, "nodes": len(case.nodes), "max_abs": ev.max_abs,
            "reproduces": ev.fails, "sample": case.sample}


class Repro:
    """What ``Pipeline.repro`` made of a result: the origin's case (None: ``why`` says why there is
    none), written as the ONNX test-case layout by :meth:`write`."""

    def __init__(self, result: Any, case: Any, why: str = "", note: str = "") -> None:
        self.result, self.case, self.why, self.note = result, case, why, note

    def write(self, path: str) -> dict[str, Any]:
        """Write the case to the folder ``path`` (atomically); its summary (nodes, the error it reproduces)."""
        if self.case is None:
            raise ValueError(f"no test case to write: {self.why}")
        ev = write_case(self.case, path, self.note)
        return summary(self.case, ev, path)
