"""A Triton ``config.pbtxt`` read with protobuf's text-format parser against Triton's own
``model_config.proto`` (tritonclient ships the generated module): never parsed by hand.  A server's
JSON config (HTTP ``/v2/models/NAME/config``) is read into the same message."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from drifttui.errors import InputError

#: Triton data types -> numpy / drifttui dtype names (TYPE_STRING has none: refused)
DTYPES = {"TYPE_BOOL": "bool", "TYPE_UINT8": "uint8", "TYPE_UINT16": "uint16", "TYPE_UINT32": "uint32",
          "TYPE_UINT64": "uint64", "TYPE_INT8": "int8", "TYPE_INT16": "int16", "TYPE_INT32": "int32",
          "TYPE_INT64": "int64", "TYPE_FP16": "float16", "TYPE_FP32": "float32", "TYPE_FP64": "float64",
          "TYPE_BF16": "bfloat16"}
#: the wire names tritonclient's InferInput takes
WIRE = {"bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
        "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "float16": "FP16",
        "float32": "FP32", "float64": "FP64", "bfloat16": "BF16"}

_NEEDS = ("tritonclient is not installed (it ships Triton's model_config protobuf module)",
          "pip install 'drifttui[triton]'")


def pb2() -> Any:
    """Triton's generated ``model_config_pb2`` (from tritonclient)."""
    try:
        from tritonclient.grpc import model_config_pb2
    except ImportError as exc:
        raise InputError(*_NEEDS) from exc
    return model_config_pb2


def parse_text(text: str, where: str) -> Any:
    """``text`` (a config.pbtxt) as a ``ModelConfig``; a parse error names the line and column."""
    from google.protobuf import text_format

    config = pb2().ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        line, col = exc.GetLine(), exc.GetColumn()
        detail = str(exc).split(" : ", 1)[-1] if " : " in str(exc) else str(exc)
        at = f"line {line}, column {col}" if line else "somewhere"
        raise InputError(f"{where} does not parse at {at}: {detail[:240]}",
                         "fix that line (the syntax is Triton's model_config.proto in protobuf text format)") from exc
    return config


def read_config(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}", "give a model directory with a readable config.pbtxt") from exc
    return parse_text(text, str(path))


def from_json(data: dict, where: str) -> Any:
    """A server's JSON model config as a ``ModelConfig`` (fields this tritonclient does not know are skipped)."""
    from google.protobuf import json_format

    config = pb2().ModelConfig()
    try:
        json_format.ParseDict(data, config, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise InputError(f"the config {where} sent does not read as Triton's ModelConfig: {str(exc)[:200]}",
                         "check the server's version against tritonclient's") from exc
    return config


def dtype_name(enum_value: int) -> str:
    """A ``DataType`` enum value as a dtype name ("float32"); a type drifttui cannot feed is refused."""
    name = pb2().DataType.Name(enum_value)
    if name not in DTYPES:
        raise InputError(f"the config's data type {name} cannot be compared numerically",
                         "drifttui compares numeric tensors (TYPE_FP32, TYPE_FP16, TYPE_INT64, ...)")
    return DTYPES[name]


def parameters(config: Any) -> dict[str, str]:
    """The config's ``parameters { key: ... value { string_value: ... } }`` as a plain mapping."""
    return {k: v.string_value for k, v in config.parameters.items()}
