"""Which file a Triton model repository serves, chosen as Triton chooses it.

* the model is the directory ``REPO/NAME``; its ``config.pbtxt`` (optional: Triton's autocomplete
  then fills it from the file) must name the same model when it names one;
* versions are the numeric subdirectories (a name that is not a number, or starts with 0, is ignored);
  ``version_policy`` serves ``latest { num_versions: N }`` (default: the latest 1), ``all`` or
  ``specific { versions: [...] }``; a request without a version gets the highest served one;
* the file is ``default_model_filename`` (default ``model.onnx``) in the version directory; when that
  is a directory, ``model.onnx`` inside it (the onnxruntime backend's rule, src/onnxruntime.cc LoadModel).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from drifttui.core.runtime.triton.config import pb2, read_config
from drifttui.errors import InputError

ORT_PLATFORM = "onnxruntime_onnx"
ORT_BACKEND = "onnxruntime"


@dataclass(frozen=True)
class ServedFile:
    """The file a repository serves for one model and version, and the config that serves it."""

    repo: Path
    name: str
    version: int
    versions: tuple[int, ...]      # every version the policy serves
    path: Path                     # the ONNX file
    config: Any                    # model_config_pb2.ModelConfig
    has_config: bool               # False: no config.pbtxt (Triton's autocomplete fills it)
    why: str                       # how the file was chosen, in one clause


def version_dirs(model_dir: Path) -> list[int]:
    out = []
    for child in model_dir.iterdir():
        if child.is_dir() and child.name.isdigit() and not child.name.startswith("0"):
            out.append(int(child.name))
    return sorted(out)


def served_versions(config: Any, available: list[int]) -> tuple[list[int], str]:
    """The versions ``version_policy`` serves among ``available``, and the policy in words."""
    policy = config.version_policy
    which = policy.WhichOneof("policy_choice")
    if which == "all":
        return list(available), "version_policy all"
    if which == "specific":
        wanted = list(policy.specific.versions)
        return [v for v in available if v in wanted], f"version_policy specific {wanted}"
    n = policy.latest.num_versions if which == "latest" and policy.latest.num_versions > 0 else 1
    return available[-n:], (f"version_policy latest {n}" if which == "latest" else "the default policy (latest 1)")


def resolve(repo: str, name: str, version: Optional[int] = None) -> ServedFile:
    """The file Triton serves for model ``name`` (version ``version``, or the highest served)."""
    root = Path(repo)
    if not root.is_dir():
        raise InputError(f"--triton-repo {repo} is not a directory", "give the model repository's root folder")
    model_dir = root / name
    if not name or "/" in name or name in (".", "..") or not model_dir.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir())[:12]
        raise InputError(f"the repository has no model {name!r}",
                         f"use --model with one of: {', '.join(known) or '(none)'}")
    cfg_path = model_dir / "config.pbtxt"
    has_config = cfg_path.is_file()
    config = read_config(cfg_path) if has_config else _empty(name)
    if config.name and config.name != name:
        raise InputError(f"{cfg_path} names the model {config.name!r}, its folder is {name!r}",
                         "Triton refuses this: make them the same")
    _check_backend(config, cfg_path)
    available = version_dirs(model_dir)
    served, policy = served_versions(config, available)
    if not served:
        raise InputError(f"model {name!r} serves no version ({policy}; version folders: {available or 'none'})",
                         "add a numeric version folder (1/) or fix version_policy")
    if version is None:
        chosen, how = served[-1], f"the highest version {policy} serves"
    elif version in served:
        chosen, how = version, f"--version {version}"
    else:
        raise InputError(f"model {name!r} does not serve version {version} ({policy} serves {served})",
                         f"use --version with one of {served}")
    filename = config.default_model_filename or "model.onnx"
    path = model_dir / str(chosen) / filename
    if path.is_dir():
        path = path / "model.onnx"
    if not path.is_file():
        raise InputError(f"version {chosen} of {name!r} has no file {path.relative_to(root)}",
                         "put the ONNX file there or fix default_model_filename")
    fname = f"default_model_filename {filename}" if config.default_model_filename else "model.onnx (the default)"
    return ServedFile(root, name, chosen, tuple(served), path, config, has_config, f"version {chosen} ({how}), {fname}")


def _empty(name: str) -> Any:
    return pb2().ModelConfig(name=name)


def _check_backend(config: Any, where: Path) -> None:
    platform, backend = config.platform, config.backend
    if platform and platform != ORT_PLATFORM or backend and backend != ORT_BACKEND:
        raise InputError(f"{where} serves the model with {platform or backend!r}, not ONNX Runtime",
                         f"drifttui compares files served by the onnxruntime backend (platform {ORT_PLATFORM!r})")
