"""A keep-list in the words each converter takes: the node names the user's float model had, and the
argument of each converter's call (``nodes_to_exclude``, ``node_block_list``, ``op_block_list``)."""
from __future__ import annotations

from typing import Any

from drifttui.core.onnx import nbits
from drifttui.core.onnx.nbits import NBITS_OPS
from drifttui.core.onnx.qviews import QOPERATOR, is_view_node

FLOAT = 1


def original_names(index: Any, nodes: set[int]) -> list[str]:
    """The node names the user's float model had (quantize_dynamic adds ``_quant``)."""
    out = []
    for k in sorted(nodes):
        n = index.nodes[k]
        if n.op_type in ("DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear"):
            continue
        name = n.name[: -len("_quant")] if n.name.endswith("_quant") else n.name
        tail = f"_Q{nbits.bits_of(n)}" if n.op_type in NBITS_OPS else ""
        out.append(name[: -len(tail)] if tail and name.endswith(tail) else name)     # MatMulNBitsQuantizer's
    return list(dict.fromkeys(out))


def converter_forms(index: Any, nodes: set[int], fmt: str) -> dict[str, str]:
    """The keep-list as each converter takes it."""
    names = original_names(index, nodes)
    ops = sorted({index.nodes[k].op_type for k in nodes
                  if index.nodes[k].op_type not in ("DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear")})
    if any(index.nodes[k].op_type in NBITS_OPS for k in nodes):
        return {"onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer": f"nodes_to_exclude={names!r}"}
    if "int8" in fmt:
        names = list(dict.fromkeys(excluded_already(index) + names))
        return {"onnxruntime.quantization (quantize_dynamic / quantize_static)": f"nodes_to_exclude={names!r}"}
    return {"onnxruntime.transformers.float16.convert_float_to_float16": f"node_block_list={names!r}",
            "onnxconverter_common.float16.convert_float_to_float16": f"node_block_list={names!r}",
            "op_block_list (all nodes of these types)": f"op_block_list={ops!r}"}


_WEIGHTED = ("Conv", "ConvTranspose", "MatMul", "Gemm")


def excluded_already(index: Any) -> list[str]:
    """A statically quantized file's weighted ops that still read a float32 weight: nodes the user
    excluded already (quantize_static quantizes every Conv / MatMul / Gemm weight it is not told to
    keep), listed with the keep-list so that redoing the conversion with it keeps them too."""
    if not any(n.op_type == "QuantizeLinear" or n.op_type.startswith(QOPERATOR) for n in index.nodes) \
            or any(n.op_type == "DynamicQuantizeLinear" for n in index.nodes):
        return []
    out = []
    for n in index.nodes:
        if n.op_type in _WEIGHTED and not is_view_node(n) and any(
                i in index.initializers and index.initializers[i].data_type == FLOAT for i in n.inputs[1:2]):
            out.append(n.name)
    return out
