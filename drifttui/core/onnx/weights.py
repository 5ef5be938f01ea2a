"""The weights of an ONNX file read where they lie: each external data file mapped once, shared by
every ONNX Runtime session of the run and by the tensors drifttui reads itself.

ORT given a file maps it per session, and every mapping counts again in the process's resident
memory (a 0.9 GB model with four sessions: 3.5 GB); given the same buffers
(``SessionOptions.add_initializer``) every session reads the one mapping, without a copy (the
sessions that pack weights for speed, the output pass's, still copy them into their packed layout).
"""
from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any, Optional

import numpy as np


class SharedWeights:
    """The external data files of one folder, each mapped once (read-only) for every session.

    ORT given a file maps it per session, and each mapping counts again in the process's
    resident memory; given the same buffers (``SessionOptions.add_initializer``) every session
    reads the one mapping.  Held weakly here and strongly by the sessions that use it: the
    mapping goes when its last session does.
    """

    _open: "weakref.WeakValueDictionary[str, SharedWeights]" = weakref.WeakValueDictionary()

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.maps: dict[str, np.memmap] = {}

    @classmethod
    def of(cls, data_dir: Path) -> "SharedWeights":
        key = os.path.realpath(str(data_dir))
        found = cls._open.get(key)
        if found is None:
            found = cls(key)
            cls._open[key] = found
        return found

    def array(self, tensor: Any) -> Optional[np.ndarray]:
        """``tensor``'s external data as a read-only array over the mapping (no copy), or None
        when it cannot be viewed in place (misaligned, segmented, another byte order...)."""
        import sys

        from onnx import helper
        from onnx.external_data_helper import ExternalDataInfo

        if sys.byteorder != "little":
            return None
        try:
            info = ExternalDataInfo(tensor)
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type))
        except Exception:
            return None
        count = int(np.prod(tensor.dims, dtype=np.int64)) if len(tensor.dims) else 1
        offset = int(info.offset or 0)
        if dtype.kind not in "fiub" or offset % dtype.itemsize or (info.length is not None and
                                                                   int(info.length) < count * dtype.itemsize):
            return None
        mm = self.maps.get(info.location)
        if mm is None:
            path = os.path.realpath(os.path.join(self.folder, info.location))
            if os.path.commonpath([self.folder, path]) != self.folder or not os.path.isfile(path):
                return None
            mm = np.memmap(path, dtype=np.uint8, mode="r")
            self.maps[info.location] = mm
        if offset + count * dtype.itemsize > mm.size:
            return None
        return mm[offset:offset + count * dtype.itemsize].view(dtype).reshape(tuple(tensor.dims))

    def release(self) -> None:
        """Give the mapped pages back (they stay in the page cache; a later read maps them again)."""
        import mmap

        for mm in self.maps.values():
            raw = getattr(mm, "_mmap", None)
            if raw is not None and hasattr(raw, "madvise"):
                try:
                    raw.madvise(mmap.MADV_DONTNEED)
                except (OSError, ValueError):
                    pass

    def add_to(self, so: Any, model: Any) -> list[Any]:
        """Give ``so`` every external initializer of ``model`` as a buffer over the mapping;
        return the OrtValues (the session must keep them)."""
        import onnxruntime as ort
        from onnx import TensorProto

        values = []
        for t in model.graph.initializer:
            if t.data_location != TensorProto.EXTERNAL:
                continue
            arr = self.array(t)
            if arr is None:
                continue                    # ORT reads this one from the file itself
            value = ort.OrtValue.ortvalue_from_numpy(arr)
            so.add_initializer(t.name, value)
            values.append(value)
        return [self, values]


class ExternalTensorError(ValueError):
    """A tensor's values lie in an external data file, and no folder to read it from was given."""


def read_tensor(tensor: Any, data_dir: Optional[Path] = None) -> np.ndarray:
    """THE reader of a TensorProto's values, wherever they lie: in the proto, or in its external data file
    (``data_dir``: the ONNX file's folder; a view over the shared mapping when it can be one, read-only).

    ``numpy_helper.to_array`` alone resolves an external location from the process's working directory: a
    weight-less proto (drifttui loads files without their weights) then fails, or reads a same-named file of
    another folder.  An external tensor without ``data_dir`` is refused (``ExternalTensorError``)."""
    from onnx import TensorProto, numpy_helper

    if tensor.data_location != TensorProto.EXTERNAL:
        return numpy_helper.to_array(tensor)
    if data_dir is None:
        raise ExternalTensorError(f"tensor {tensor.name!r} lies in external data and no folder was given "
                                  "to read it from")
    arr = SharedWeights.of(Path(data_dir)).array(tensor)
    return arr if arr is not None else numpy_helper.to_array(tensor, str(data_dir))


def with_array(tensor: Any, arr: Any) -> Any:
    """A TensorProto named like ``tensor``, of its element type, holding ``arr`` in the proto.  A 0-d array stays
    0-d (``np.ascontiguousarray`` alone makes it 1-d: a scalar zero point of shape [1] beside a scalar scale
    keeps ONNX Runtime from fusing a QDQ unit, which then computes otherwise than the file)."""
    from onnx import helper, numpy_helper

    a = np.asarray(arr).astype(helper.tensor_dtype_to_np_dtype(tensor.data_type), copy=False)
    return numpy_helper.from_array(np.ascontiguousarray(a).reshape(a.shape), tensor.name)


def weights_in(model: Any, data_dir: Optional[Path]) -> Any:
    """``model`` with every tensor that lies in external data read into the proto (from ``data_dir``, the
    folder its locations are relative to): a copy, for a file written elsewhere (a repaired copy checked from a
    temporary folder, ``repair --out``); ``model`` itself when no tensor of it is external."""
    from onnx import ModelProto, TensorProto
    from onnx.external_data_helper import _get_all_tensors

    if data_dir is None or not any(t.data_location == TensorProto.EXTERNAL for t in _get_all_tensors(model)):
        return model
    copy = ModelProto()
    copy.CopyFrom(model)
    for t in _get_all_tensors(copy):
        if t.data_location == TensorProto.EXTERNAL:
            t.CopyFrom(with_array(t, read_tensor(t, data_dir)))
    return copy


def release_view(arr: Any) -> None:
    """Give back the mapped pages under ``arr``, a view over a mapping (``SharedWeights.array``);
    anything else is left alone.  The pages stay in the page cache: a later read (a session using
    the same mapping) maps them again."""
    import mmap

    raw = getattr(arr, "_mmap", None)
    if not isinstance(raw, mmap.mmap) or not hasattr(raw, "madvise") or not arr.nbytes:
        return
    try:
        base = np.frombuffer(raw, np.uint8).__array_interface__["data"][0]
        start = arr.__array_interface__["data"][0] - base
        page = mmap.PAGESIZE
        lo, hi = start // page * page, min(len(raw), -(-(start + arr.nbytes) // page) * page)
        if 0 <= lo < hi:
            raw.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
    except (OSError, ValueError, TypeError):
        pass


def release_weights(data_dir: Optional[Path]) -> None:
    """``SharedWeights.release`` for the weights of ``data_dir``, when they are mapped."""
    if data_dir is not None:
        found = SharedWeights._open.get(os.path.realpath(str(data_dir)))
        if found is not None:
            found.release()


def give_back_freed() -> None:
    """Return the memory freed so far to the system (glibc keeps freed blocks for reuse: after the
    output session's packed weights are freed the process held on to most of them, and the per-layer
    passes that follow set the run's peak on top).  A no-op where there is no glibc."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    name = ctypes.util.find_library("c")
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass
