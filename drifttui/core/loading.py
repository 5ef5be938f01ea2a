"""Import user code, load models and checkpoints, load ONNX files (with external data).

Every failure becomes an InputError/ModelError with a one-line message naming the fix.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from drifttui.core.spec import CallableSpec, ModelSpec
from drifttui.errors import InputError, first_line


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
            module_spec.loader.exec_module(module)
        except Exception as exc:  # user code: anything can happen
            sys.modules.pop(mod_name, None)
            raise InputError(f"{what} {str(path)!r} failed to import: {type(exc).__name__}: {exc}",
                             "fix the error in that file (rerun with --debug for the traceback)") from exc
        finally:
            try:
                sys.path.remove(str(path.resolve().parent))
            except ValueError:
                pass
    else:
        try:
            module = importlib.import_module(spec.target)
        except Exception as exc:
            raise InputError(f"{what} module {spec.target!r} failed to import: {type(exc).__name__}: {exc}",
                             "check the module name and that it is installed or on PYTHONPATH") from exc
    fn = getattr(module, spec.attr, None)
    if fn is None:
        raise InputError(f"{what} {str(spec)!r}: {spec.target!r} has no attribute {spec.attr!r}",
                         "check the name after the colon")
    if not callable(fn):
        raise InputError(f"{what} {str(spec)!r} is not callable", "point at a function or class")
    return fn


def load_torch_model(spec: ModelSpec) -> Any:
    """Return an eval-mode torch model (nn.Module or ScriptModule or ExportedProgram module)."""
    import torch

    if spec.kind == "example":
        from drifttui.examples import get_example

        return get_example(spec.example or "").build_model()
    if spec.kind == "memory":
        from drifttui.core import memory

        return memory.model(spec.text)
    if spec.kind == "callable":
        assert spec.callable is not None
        fn = import_callable(spec.callable, "MODEL")
        try:
            model = fn()
        except Exception as exc:
            raise InputError(f"MODEL {spec.text!r} raised {type(exc).__name__}: {exc}",
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
                "pass a file saved with torch.jit.save, a .pt2 from torch.export.save, or a file.py:fn callable "
                "(a plain state_dict checkpoint needs a callable that builds the model and loads it with weights_only=True)",
            ) from exc
    if spec.kind == "exported_program":
        try:
            program = torch.export.load(str(spec.path))
        except Exception as exc:
            raise InputError(f"{str(spec.path)!r} is not an ExportedProgram ({type(exc).__name__})",
                             "pass a .pt2 saved with torch.export.save") from exc
        try:
            # unflatten restores the module hierarchy, so per-module hooks still work
            return torch.export.unflatten(program)
        except Exception:
            return program.module()
    raise InputError(f"unknown model kind {spec.kind}", "pass file.py:fn, a TorchScript file or a .pt2")


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


def load_onnx(path: Path) -> Any:
    """Load an ONNX model with its external data; check it; return the ModelProto."""
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
    try:
        from onnx.external_data_helper import load_external_data_for_model, uses_external_data

        externals = [t for t in model.graph.initializer if uses_external_data(t)]
        for t in externals:
            location = next((e.value for e in t.external_data if e.key == "location"), "")
            if not (path.parent / location).is_file():
                raise InputError(
                    f"ONNX file {str(path)!r} needs external data file {location!r}, which is missing",
                    "put the .data file next to the .onnx file (as it was exported)")
        if externals:
            load_external_data_for_model(model, str(path.parent))
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"external data of {str(path)!r} cannot be read ({type(exc).__name__}: {exc})",
                         "put the complete .data file next to the .onnx file") from exc
    try:
        onnx.checker.check_model(model, full_check=False)
    except Exception as exc:
        first = first_line(exc)
        raise InputError(f"ONNX file {str(path)!r} is invalid: {first}", "re-export the model") from exc
    return model


def new_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="drifttui-"))
