"""Hostile names (issue 22): a tiny model whose module names carry terminal escapes, a GitHub
annotation, HTML and Markdown table syntax, and its TorchScript export with a drift injected
into the hostile Linear (so the hostile name is the drift origin and every report quotes it).

``export_drifting(folder)`` writes ``hostile.onnx`` and returns (model spec, onnx path)."""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

# OSC 52 clipboard write, OSC 0 window title, OSC 8 hyperlink, CSI 2J (clear screen), a bidi
# override, a newline followed by a GitHub workflow command
ESCAPES = ("\x1b]52;c;cHduZWQ=\x07\x1b]0;TITLE\x07\x1b]8;;https:evil\x07link\x1b]8;;\x07"
           "\x1b[2J\u202e")
ANNOTATION = "\n::error title=pwned1::x\r::warning::y"
HTML = "</details><script>alert(1)</script><img src=x onerror=alert(2)>**bold** [a](https:x) @octocat|cell|\n| row |"
MARKUP = "enc[/b][link=https:evil]z"
EVIL = "enc" + ESCAPES + ANNOTATION
EVIL_HTML = "dec" + HTML
CONTROL = "[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"   # what must never be printed


class Hostile(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.add_module(EVIL, nn.Linear(8, 8))
        self.add_module(EVIL_HTML, nn.Linear(8, 8))
        self.add_module(MARKUP, nn.Linear(8, 4))

    def forward(self, x):
        x = torch.relu(getattr(self, EVIL)(x))
        x = torch.relu(getattr(self, EVIL_HTML)(x))
        return getattr(self, MARKUP)(x)


def build() -> nn.Module:
    torch.manual_seed(0)
    return Hostile().eval()


def export_drifting(folder: Path) -> tuple[str, str]:
    """The TorchScript export (names as scopes) with the hostile Linear's bias shifted by 0.05."""
    import warnings

    import onnx
    from onnx import numpy_helper

    path = folder / "hostile.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(build(), (torch.randn(1, 8),), str(path), dynamo=False, input_names=["x"])
    model = onnx.load(str(path))
    for init in model.graph.initializer:
        if init.name == f"{EVIL}.bias":
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) + 0.05, init.name))
            break
    else:
        raise AssertionError("the hostile bias is not in the export")
    onnx.save(model, str(path))
    return f"{Path(__file__).resolve()}:build", str(path)
