"""Every file drifttui writes goes through here: checked before any work, written atomically.

- :func:`check_output` refuses, before the run starts, a path that is a folder, sits in a
  missing or read-only folder, or names one of the run's input files (the model, ``--onnx``,
  its external data, ``--inputs``): an output never overwrites what it was computed from.
- :func:`write_atomic` writes to a temporary file in the same folder and renames it over the
  target, so a failed run leaves no half-written file. The new file gets the mode the umask
  gives a new file, or keeps the mode of the file it replaces.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Optional

from drifttui.errors import InputError


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


# A temp file of write_atomic lives for the milliseconds of one write: one older than this was
# left by a run that was killed (SIGKILL, a power cut) between writing and renaming it.
STALE_SECONDS = 60.0
TMP_PREFIX, TMP_SUFFIX = ".drifttui-", ".tmp"


def remove_leftovers(path: str) -> list[str]:
    """Remove the partial reports a killed run left next to ``path`` (``.drifttui-*.tmp`` older than
    STALE_SECONDS); returns their paths, for the caller to say so."""
    import time

    folder = Path(path).parent if str(Path(path).parent) else Path(".")
    removed: list[str] = []
    try:
        leftovers = [p for p in folder.iterdir() if p.name.startswith(TMP_PREFIX) and p.name.endswith(TMP_SUFFIX)]
    except OSError:
        return removed
    now = time.time()
    for p in leftovers:
        try:
            if p.is_file() and not p.is_symlink() and now - p.stat().st_mtime > STALE_SECONDS:
                p.unlink()
                removed.append(str(p))
        except OSError:
            pass
    return removed


def check_output(path: str, flag: str, inputs: Iterable[Optional[str]] = ()) -> None:
    """Fail early when ``path`` (given as ``flag``) cannot or must not be written."""
    if path == "-":
        return
    p = Path(path)
    for src in inputs:
        if src and _same_file(p, Path(src)):
            raise InputError(f"{flag} {path!r} is an input of this run ({src})",
                             "write the output to another path: drifttui never overwrites its inputs")
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise InputError(f"{flag} {path!r} is a directory", "give a file path")
    if not parent.is_dir():
        raise InputError(f"{flag} {path!r}: folder {str(parent)!r} does not exist", "create it or pick another path")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise InputError(f"{flag} {path!r} is not writable", "pick a path you can write to")


def _new_file_mode(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str, text: str, flag: str = "output") -> None:
    """Write ``text`` to ``path`` (``-``: stdout) all at once or not at all."""
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    # a path holding a non-UTF-8 byte (a surrogate escape) stays visible as \udcff, never a crash
    write_atomic_bytes(path, text.encode("utf-8", errors="backslashreplace"), flag)


def write_atomic_bytes(path: str, data: bytes, flag: str = "output") -> None:
    """Write ``data`` (a report's text, an ONNX file) as a temp file in the same folder + rename."""
    p = Path(path)
    mode = _new_file_mode(p)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=TMP_SUFFIX, dir=str(p.parent if str(p.parent) else "."))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"cannot write {flag} {path!r}: {exc.strerror}", "pick a path you can write to") from exc


def _folder_target(path: str) -> Path:
    """The folder ``--out`` names: a symbolic link is written through (its target is the folder)."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def check_dir(path: str, inputs: Iterable[Optional[str]] = ()) -> None:
    """Before the run: a folder output (``repro --out``) must be a new or empty folder (through a
    link too) in a writable folder, and must not hold an input of the run."""
    p = _folder_target(path)
    for src in inputs:
        if src and os.path.realpath(src).startswith(os.path.realpath(p) + os.sep):
            raise InputError(f"--out {path!r} holds an input of this run ({src})", "pick a new folder")
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise InputError(f"--out {path!r} exists and is not an empty folder", "give a new folder for the test case")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise InputError(f"--out {path!r}: folder {str(parent)!r} is missing or not writable", "pick another path")


def write_model(path: str, model: object, flag: str = "output") -> None:
    """Write an ONNX model all at once or not at all, by the one save rule (``core/onnx/io.py``): a
    model too big for one protobuf message gets its weights in ``<file>.data`` beside it."""
    import shutil

    from drifttui.core.onnx.io import fits_inline, save_model

    if fits_inline(model):
        write_atomic_bytes(path, model.SerializeToString(), flag)      # type: ignore[attr-defined]
        return
    p = Path(path)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=str(p.parent if str(p.parent) else ".")))
    try:
        saved = save_model(model, tmp / p.name)
        os.replace(str(saved) + ".data", str(p) + ".data")
        os.replace(saved, p)
    except OSError as exc:
        raise InputError(f"cannot write {flag} {path!r}: {exc.strerror}", "pick a path you can write to") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
