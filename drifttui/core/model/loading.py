"""Import user code, load models and checkpoints, load ONNX files (with external data).

Every failure becomes an InputError/ModelError with a one-line message naming the fix.
What runs: the user's own Python code (by design), imported without writing bytecode next
to it. What never runs: pickles (checkpoints are loaded weights_only; a ``.pt2`` archive,
which ``torch.export.load`` partly unpickles without weights_only, is refused unless the
user passes ``--trust-model-file``).
"""
from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from drifttui.core.model import memory
from drifttui.core.onnx.branch_shapes import clear_branch_shapes
from drifttui.core.onnx.order import sort_in_place
from drifttui.core.model.spec import CallableSpec, ModelSpec
from drifttui.errors import InputError, first_line, folded

PT2_TRUST_FIX = ("pass --trust-model-file if you trust the file (loading it runs code from it), or give a "
                 "file.py:fn callable that builds the model")


@contextlib.contextmanager
def _no_bytecode() -> Iterator[None]:
    """Import user code without writing ``__pycache__`` next to it (or next to what it imports)."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


def import_callable(spec: CallableSpec, what: str) -> Callable[..., Any]:
    if spec.is_file:
        path = Path(spec.target)
        if not path.is_file():
            raise InputError(f"{what} file {str(path)!r} does not exist", "check the path")
        mod_name = f"_drifttui_user_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(mod_name, path)
        if module_spec is None or module_spec.loader is None:
            raise InputError(f"{what} {str(path)!r} cannot be imported", "pass a .py file")
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, str(path.resolve().parent))
        try:
            sys.modules[mod_name] = module
            with _no_bytecode():
                module_spec.loader.exec_module(module)
        except Exception as exc:  # user code: anything can happen
            sys.modules.pop(mod_name, None)
            raise InputError(f"{what} {str(path)!r} failed to import: {type(exc).__name__}: {first_line(exc)}",
                             "fix the error in that file (rerun with --debug for the traceback)") from exc
        finally:
            try:
                sys.path.remove(str(path.resolve().parent))
            except ValueError:
                pass
    else:
        try:
            with _no_bytecode():
                module = importlib.import_module(spec.target)
        except Exception as exc:
            raise InputError(f"{what} module {spec.target!r} failed to import: {type(exc).__name__}: "
                             f"{first_line(exc)}",
                             "check the module name and that it is installed or on PYTHONPATH") from exc
    fn = getattr(module, spec.attr, None)
    if fn is None:
        raise InputError(f"{what} {str(spec)!r}: {spec.target!r} has no attribute {spec.attr!r}",
                         "check the name after the colon")
    if not callable(fn):
        raise InputError(f"{what} {str(spec)!r} is not callable", "point at a function or class")
    return fn


def load_torch_model(spec: ModelSpec, trust: bool = False) -> Any:
    """Return an eval-mode torch model (nn.Module or ScriptModule or ExportedProgram module).

    ``trust``: the user passed --trust-model-file, which a ``.pt2`` needs (see the module doc)."""
    import torch

    if spec.kind == "example":
        from drifttui.core.model.examples import get_example   # lazy: only an example: spec builds its torch model

        return get_example(spec.example or "").build_model()
    if spec.kind == "memory":
        return memory.model(spec.text)
    if spec.kind == "callable":
        assert spec.callable is not None
        fn = import_callable(spec.callable, "MODEL")
        try:
            model = fn()
        except Exception as exc:
            raise InputError(f"MODEL {spec.text!r} raised {type(exc).__name__}: {folded(exc)}",
                             "fix the callable so that it returns the model (rerun with --debug for the traceback)") from exc
        if not isinstance(model, torch.nn.Module):
            raise InputError(f"MODEL {spec.text!r} returned {type(model).__name__}, not a torch.nn.Module",
                             "make the callable return the nn.Module itself")
        return model.eval()
    assert spec.path is not None
    if not spec.path.is_file():
        raise InputError(f"model file {str(spec.path)!r} does not exist", "check the path")
    if spec.kind == "torchscript":
        try:
            return torch.jit.load(str(spec.path), map_location="cpu").eval()
        except Exception as exc:
            raise InputError(
                f"{str(spec.path)!r} is not a TorchScript file ({type(exc).__name__}: {first_line(exc)})",
                "pass a file saved with torch.jit.save, a .pt2 from torch.export.save (with --trust-model-file), "
                "or a file.py:fn callable "
                "(a plain state_dict checkpoint needs a callable that builds the model and loads it with weights_only=True)",
            ) from exc
    if spec.kind == "exported_program":
        return _load_exported_program(spec.path, trust)
    raise InputError(f"unknown model kind {spec.kind}", "pass file.py:fn, a TorchScript file or a .pt2")


def _load_exported_program(path: Path, trust: bool) -> Any:
    import torch

    if not trust:
        raise InputError(f"{str(path)!r} is a .pt2 archive: torch.export.load unpickles parts of it without "
                         "weights_only, which can run code from the file", PT2_TRUST_FIX)
    try:
        with _quiet_torch_logs():
            program = torch.export.load(str(path))
    except Exception as exc:
        raise InputError(f"{str(path)!r} is not an ExportedProgram ({type(exc).__name__}: {first_line(exc)[:200]})",
                         "pass a .pt2 saved with torch.export.save") from exc
    with _quiet_torch_logs():
        try:
            # unflatten restores the module hierarchy, so per-module hooks still work
            return torch.export.unflatten(program)
        except Exception:
            return program.module()


@contextlib.contextmanager
def _quiet_torch_logs() -> Iterator[None]:
    """torch.export.load logs multi-line warnings (and logging errors) to stderr: drifttui's
    output stays one line per error."""
    import logging
    import warnings

    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def load_checkpoint(path: str | Path) -> Any:
    """Load a pickled checkpoint safely (weights_only=True). For user callables and examples."""
    import torch

    try:
        return torch.load(str(path), map_location="cpu", weights_only=True)
    except FileNotFoundError as exc:
        raise InputError(f"checkpoint {str(path)!r} does not exist", "check the path") from exc
    except Exception as exc:
        raise InputError(f"checkpoint {str(path)!r} cannot be loaded with weights_only=True ({type(exc).__name__})",
                         "save tensors/state_dicts only, or allow-list the classes with torch.serialization.add_safe_globals") from exc


# An ONNX file whose initializers are embedded and weigh more than this is written once into the
# run's workdir with its weights as external data: every later session then maps the weights
# from that file instead of receiving a serialised copy of the whole model.
EXTERNALISE_BYTES = 64 << 20


def load_onnx(path: Path, workdir: Optional[Path] = None, notes: Optional[list[str]] = None) -> tuple[Any, Path]:
    """Load an ONNX model WITHOUT its external data; check it; return ``(proto, path)``.

    The weights stay where they lie: the proto keeps its external-data references (relative to
    ``path.parent``), ONNX Runtime maps the file, and drifttui reads the few tensors it needs from
    it (``graph.tensor_array``).  The checker is given the path, not the proto, so a model of any
    size is checked (protobuf cannot serialise more than 2 GiB) and nothing is serialised again.
    With ``workdir``, embedded weights over ``EXTERNALISE_BYTES`` are moved once into an external
    file there, and the returned path is that copy's.

    A file whose only fault is its node order (ORT's float16 converter appends the input Casts at
    the end; ONNX Runtime sorts the graph itself and runs it) is sorted in memory, and ``notes``
    gets a line saying so; the file itself is never changed.  The shapes declared on subgraph outputs (If
    branches) are cleared in the copy (``onnx/branch_shapes.py``): ORT at level disable allocates by them.
    """
    import onnx

    if not path.is_file():
        raise InputError(f"ONNX file {str(path)!r} does not exist", "check the --onnx path")
    if path.stat().st_size == 0:
        raise InputError(f"ONNX file {str(path)!r} is empty", "re-export the model")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise InputError(f"ONNX file {str(path)!r} is corrupt or truncated ({type(exc).__name__})",
                         "re-export the model or copy the file again") from exc
    if len(model.graph.node) == 0 and len(model.graph.output) == 0:
        raise InputError(f"ONNX file {str(path)!r} holds no graph (corrupt or not an ONNX model)",
                         "re-export the model or copy the file again")
    _check_external_data(model, path)
    clear_branch_shapes(model)      # hints an exporter can write wrong; ORT at level disable allocates by them
    try:
        _checker(model, path)
    except Exception as exc:
        first = first_line(exc)
        if "No Op registered for" in first and _ort_loads(path):
            if notes is not None:
                notes.append(f"onnx's checker refuses the file ({first[:160]}): an ONNX Runtime contrib op in the "
                             "default domain, as ORT's optimisers write it (SimplifiedLayerNormalization); "
                             "ONNX Runtime loads it, so drifttui takes it as ORT runs it")
            return (_externalise(model, workdir) if workdir is not None and _embedded_bytes(model) > EXTERNALISE_BYTES
                    else (model, path))
        late = sort_in_place(model) if "topologically sorted" in first else None
        if late is None:
            raise InputError(f"ONNX file {str(path)!r} is invalid: {first}", "re-export the model") from exc
        _check_sorted(model, path)
        if notes is not None:
            notes.append(f"the file's nodes are not in topological order (node {late!r} reads a value made later "
                         "in the list, as ORT's float16 converter leaves it); drifttui sorted its in-memory copy, "
                         "as ONNX Runtime does (the file is unchanged)")
    if workdir is not None and _embedded_bytes(model) > EXTERNALISE_BYTES:
        return _externalise(model, workdir)
    return model, path


def _checker(model: Any, path: Path) -> None:
    """onnx's checker on the file.  Its path checker takes UTF-8 text only: a path holding a
    non-UTF-8 byte (surrogate-escaped by Python) is checked in memory when its weights are embedded,
    and not by onnx when they lie in external files (ONNX Runtime still loads and checks it)."""
    import onnx
    from onnx.external_data_helper import uses_external_data

    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        if not any(uses_external_data(t) for t in _all_tensors(model)):
            onnx.checker.check_model(model, full_check=False)
        return
    onnx.checker.check_model(str(path), full_check=False)


def _ort_loads(path: Path) -> bool:
    """True when ONNX Runtime loads the file (optimisations off): ORT's optimisers write contrib ops in
    the default domain (SimplifiedLayerNormalization at ENABLE_EXTENDED and above, the transformers
    optimizer's RMSNorm fusion) that onnx's checker does not know."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4      # fatal only: a failure is raised, and drifttui says it in one line
    try:
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def _check_sorted(model: Any, path: Path) -> None:
    """The checker on the sorted in-memory copy.  A copy whose weights lie in external files is not
    checked again: the in-memory checker would look for them relative to the working directory
    (the file's own check above already read them)."""
    import onnx
    from onnx.external_data_helper import uses_external_data

    if any(uses_external_data(t) for t in _all_tensors(model)):
        return
    try:
        onnx.checker.check_model(model, full_check=False)
    except Exception as again:
        raise InputError(f"ONNX file {str(path)!r} is invalid: {first_line(again)}", "re-export the model") from again


def _check_external_data(model: Any, path: Path) -> None:
    """Every external tensor's file lies in the ONNX file's folder, exists and holds its bytes."""
    import os

    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    sizes: dict[str, int] = {}
    for t in _all_tensors(model):
        if not uses_external_data(t):
            continue
        try:
            info = ExternalDataInfo(t)
        except Exception as exc:
            raise InputError(f"external data of {str(path)!r} cannot be read ({type(exc).__name__}: {exc})",
                             "put the complete .data file next to the .onnx file") from exc
        location = info.location or ""
        target = confined_location(path, location)
        if location not in sizes:
            if not target.is_file():
                raise InputError(
                    f"ONNX file {str(path)!r} needs external data file {location!r}, which is missing",
                    "put the .data file next to the .onnx file (as it was exported)")
            sizes[location] = os.path.getsize(target)
        offset = int(info.offset or 0)
        length = int(info.length) if info.length is not None and int(info.length) >= 0 else None
        if offset > sizes[location] or (length is not None and offset + length > sizes[location]):
            raise InputError(f"external data of {str(path)!r} cannot be read (tensor {t.name!r} lies past the "
                             f"end of {location!r}: the file is truncated)",
                             "put the complete .data file next to the .onnx file")


def _embedded_bytes(model: Any) -> int:
    return sum(len(t.raw_data) for t in model.graph.initializer if t.HasField("raw_data"))


def _externalise(model: Any, workdir: Path) -> tuple[Any, Path]:
    """Write ``model`` into ``workdir`` with its big initializers as external data; reload it
    without them (the weights then live in one file that every session maps)."""
    import onnx

    out = workdir / "external.onnx"
    onnx.save(model, str(out), save_as_external_data=True, all_tensors_to_one_file=True,
              location="external.onnx.data", size_threshold=1024)
    del model
    return onnx.load(str(out), load_external_data=False), out


def _all_tensors(model: Any) -> list[Any]:
    """Every tensor that can point at external data (initializers, also inside subgraphs and
    attributes)."""
    from onnx.external_data_helper import _get_all_tensors

    return list(_get_all_tensors(model))


def confined_location(onnx_path: Path, location: str) -> Path:
    """The external data file ``location`` of ``onnx_path``, resolved (``..`` and symlinks
    followed); refused unless it lies inside the ONNX file's own folder. Checked before onnx
    reads anything, with the same message whether the file outside exists or not."""
    import os

    folder = os.path.realpath(onnx_path.parent)
    target = os.path.realpath(os.path.join(folder, location)) if location else ""
    if not location or os.path.isabs(location) or os.path.commonpath([folder, target]) != folder \
            or target == folder:
        raise InputError(f"ONNX file {str(onnx_path)!r} points its external data at {location!r}, outside its "
                         "folder; drifttui reads external data only from the ONNX file's own folder",
                         "re-export the model with the .data file next to the .onnx file (no symlinks, no "
                         "'..', no absolute paths)")
    return Path(target)


# Temp workdirs of this process: removed at exit even when a run did not reach its own clean-up
# (a thread still running when the process ends, an exit from a signal handler).
_WORKDIRS: set[str] = set()


def new_workdir() -> Path:
    path = tempfile.mkdtemp(prefix="drifttui-")
    _WORKDIRS.add(path)
    return Path(path)


@atexit.register
def _remove_workdirs() -> None:
    for path in list(_WORKDIRS):
        shutil.rmtree(path, ignore_errors=True)
        _WORKDIRS.discard(path)
