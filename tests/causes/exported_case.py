"""A module exported by one exporter and cut as one whole-graph test case: what the unit tests of a proposer
(opmath, quantize_torch) start from."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import onnx
import torch

from drifttui.core.explain.causes.locate.case import Case


def exported_case(module: torch.nn.Module, x: torch.Tensor, exporter: str, tmp_path: Any
                  ) -> tuple[onnx.ModelProto, Case, np.ndarray, np.ndarray]:
    """(the file, the case of all its nodes with torch's output expected, the input, torch's output)."""
    path = tmp_path / f"case-{exporter}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), str(path), dynamo=exporter == "dynamo")
    model = onnx.load(str(path))
    for k, n in enumerate(model.graph.node):
        n.name = n.name or f"n{k}"
    want = module(x).numpy()
    case = Case(model, {model.graph.input[0].name: x.numpy()}, {model.graph.output[0].name: want}, "body", 0, 0,
                1e-5, 1e-5, nodes=[n.name for n in model.graph.node])
    return model, case, x.numpy(), want
