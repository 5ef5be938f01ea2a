"""Copying and writing an ONNX model: the one copy (``copy_model``) every edit starts from, and the one
save rule.

Protobuf cannot serialise a message of 2 GiB or more, so a model whose proto is over ``INLINE_LIMIT``
(1.8 GB, a margin below the limit) is saved with its initializers in an external ``<name>.data`` file
beside it.  Saving with external data rewrites the initializers of the proto it is given, so that
case saves a copy and leaves the caller's model untouched.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Union

INLINE_LIMIT = 1_800_000_000


def fits_inline(model: Any) -> bool:
    """Whether ``model`` serialises to one protobuf message (under protobuf's 2 GiB limit)."""
    return model.ByteSize() < INLINE_LIMIT


def save_model(model: Any, path: Union[str, Path]) -> Path:
    """``model`` written to ``path`` (with ``<file>.data`` beside it when it is too big to inline)."""
    import onnx

    path = Path(path)
    if fits_inline(model):
        onnx.save(model, str(path))
    else:
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        onnx.save(copy, str(path), save_as_external_data=True, location=path.name + ".data")
        del copy
    return path


def copy_model(model: Any) -> Any:
    """A deep copy of ``model`` that an edit may change freely (protobuf's CopyFrom: no 2 GiB limit,
    unlike a serialise-and-parse round trip).  Every graph edit starts from one."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy
